"""``hourtab serve --demo``: a demo account and sample data, each feature adding its own loader."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from sqlalchemy.orm import Session

from hourtab import accounts, sessions
from hourtab.db import transaction

DEMO_EMAIL = "demo@hourtab.example"

#: Loaders called with (session, account) after the account exists; features append theirs.
LOADERS: list[Callable[[Session, accounts.Account], None]] = []


def load_demo(session: Session) -> tuple[str, str]:
    """Create (or reset) the demo account with a fresh random password and load sample data."""
    password = secrets.token_urlsafe(12)
    with transaction(session):
        account = accounts.find_account(session, DEMO_EMAIL)
        if account is None:
            account = accounts.create_account(session, DEMO_EMAIL, password, plan="pro",
                                              display_name="Demo Consultant")
        else:
            account.password_hash = accounts._hasher.hash(password)
            account.password_changed_at = accounts.utcnow()
            sessions.revoke_all(session, account.id)
        for loader in LOADERS:
            loader(session, account)
    return DEMO_EMAIL, password

from app.consultant.imports_demo import load_timesheet_demo  # noqa: E402

LOADERS.append(load_timesheet_demo)

from app.consultant.incidents_demo import load_incident_demo  # noqa: E402

LOADERS.append(load_incident_demo)

from app.consultant.retainers_demo import load_retainer_demo  # noqa: E402

LOADERS.append(load_retainer_demo)
