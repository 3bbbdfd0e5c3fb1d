"""Demo data for ``hourtab serve --demo``: retainers over the entries the timesheet demo imported.

Runs after ``load_timesheet_demo`` (and calls it itself, which is idempotent), so the sample exports
are in the account; creates each retainer once and matches the entries to it.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.consultant.imports_demo import load_timesheet_demo
from hourtab.accounts import Account
from hourtab.retainers import service
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import Retainer

#: (name, client, terms) matching the demo exports: Toggl August 2017 "Client 1", Clockify January 2024 "Company".
DEMO_RETAINERS = (
    ("Model training support", "Client 1",
     service.TermsInput(hours="120", start="2017-08-01", rounding=6, rollover_cap="10")),
    ("Platform retainer", "Company",
     service.TermsInput(hours="80", start="2024-01-01", rounding=15, rounding_mode="nearest")),
)


def load_retainer_demo(session: Session, account: Account) -> None:
    """Create the demo retainers (in the caller's transaction) unless they exist; match entries."""
    load_timesheet_demo(session, account)
    existing = set(session.scalars(select(Retainer.name).where(Retainer.account_id == account.id)))
    for name, client, terms in DEMO_RETAINERS:
        if name not in existing:
            service.create_retainer(session, account, name, client, service.parse_terms(terms),
                                    MatchRules(clients=(client,)))
    service.match_entries(session, account.id)
