"""Shared set-up for the retainer and public-page tests: a consultant, a real import, a retainer."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.retainers import service
from hourtab.timesheets.importer import import_file
from tests.factories import TOGGL_HEADER, make_account, toggl_csv

__all__ = ["AUG_20", "SAMPLE", "TOGGL_HEADER", "setup_retainer", "toggl_csv"]

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE = DATA / "toggl_floresfdev_2017-08.csv"
AUG_20 = dt.datetime(2017, 8, 20, 12, tzinfo=dt.UTC)
def setup_retainer(session, *, hours: str = "160", plan: str = "free", data: bytes | None = None,
                   email: str = "ada@example.com", **terms) -> tuple[accounts.Account, object]:
    """An account with the real Toggl sample imported and a retainer for "Client 1"."""
    account = make_account(session, email, plan, display_name="Ada Consultant", contact="ada@example.com")
    with transaction(session):
        import_file(session, account, data if data is not None else SAMPLE.read_bytes(), "export.csv")
        retainer = service.create_retainer(
            session, account, "ML platform retainer", "Client 1",
            service.parse_terms(service.TermsInput(hours=hours, start=terms.pop("start", "2017-08-01"),
                                                   timezone=terms.pop("timezone", "UTC"), **terms)))
    return account, retainer
