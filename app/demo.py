"""``hourtab serve --demo``: a demo account and sample data, each feature adding its own loader."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from sqlalchemy.orm import Session

from hourtab import accounts
from hourtab.db import transaction

DEMO_EMAIL = "demo@hourtab.example"

#: Loaders called with (session, account) after the account exists; features append theirs.
LOADERS: list[Callable[[Session, accounts.Account], None]] = []


def _demo_account(session: Session) -> tuple[accounts.Account, str]:
    password = secrets.token_urlsafe(12)
    account = accounts.find_account(session, DEMO_EMAIL)
    if account is None:
        account = accounts.create_account(session, DEMO_EMAIL, password, plan="pro",
                                          display_name="Demo Consultant")
    else:
        account.password_hash = accounts._hasher.hash(password)
        account.password_changed_at = accounts.utcnow()
    return account, password


def load_demo(session: Session) -> tuple[str, str]:
    """Create (or reset) the demo account with a fresh random password and load sample data."""
    with transaction(session):
        account, password = _demo_account(session)
        for loader in LOADERS:
            loader(session, account)
    return DEMO_EMAIL, password


def queue_demo(session: Session) -> tuple[str, str, str]:
    """The demo account now, its sample data on a worker: returns (e-mail, password, job id)."""
    from flask import current_app

    from hourtab.jobs.service import create_job

    with transaction(session):
        account, password = _demo_account(session)
        job = create_job(session, account.id, "demo_setup", {})
    current_app.extensions["hourtab.queue"].enqueue(job.id)
    return DEMO_EMAIL, password, job.id


def run_loaders(session: Session, account: accounts.Account) -> None:
    """The ``demo_setup`` job: each loader in its own transaction, reported as it goes."""
    from hourtab import progress

    for i, loader in enumerate(LOADERS):
        progress.report("Loading the demo data", i, len(LOADERS))
        with transaction(session), progress.quiet():
            loader(session, account)
    progress.report("Loading the demo data", len(LOADERS), len(LOADERS))

from app.consultant.imports_demo import load_timesheet_demo  # noqa: E402

LOADERS.append(load_timesheet_demo)

from app.consultant.incidents_demo import load_incident_demo  # noqa: E402

LOADERS.append(load_incident_demo)

from app.consultant.retainers_demo import load_retainer_demo  # noqa: E402

LOADERS.append(load_retainer_demo)
