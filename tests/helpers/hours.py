"""Shared set-up for the retainer and public-page tests: a consultant, a real import, a retainer."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import service
from tests.factories import TOGGL_HEADER, make_account, toggl_csv

__all__ = ["AUG_20", "PEOPLE", "SAMPLE", "TOGGL_HEADER", "setup_retainer", "team_export", "toggl_csv"]

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


#: The team of ``team_export``.
PEOPLE = ("Ada Lovelace", "Grace Hopper", "Edsger Dijkstra")


def team_export(last: dt.date = dt.date(2017, 10, 19)) -> bytes:
    """A Toggl detailed export of a three-person team: two clients, August to October 2017."""
    lines = ["User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
             "Duration,Tags,Amount ()\n"]
    day = dt.date(2017, 8, 1)
    n = 0
    while day <= last:
        if day.weekday() < 5:
            person = PEOPLE[n % 3]
            client = "Client 1" if n % 4 else "Client 2"
            start = dt.datetime.combine(day, dt.time(9 + n % 5, 15))
            end = start + dt.timedelta(hours=1 + n % 3, minutes=20)
            email = person.split()[0].lower() + "@team.example"
            lines.append(f"{person},{email},{client},Model training,,Tuning run {n} with a long description "
                         f"that wraps on a phone,Yes,{day},{start:%H:%M:%S},{end:%Y-%m-%d},{end:%H:%M:%S},"
                         f"{str(end - start).zfill(8)},,\n")
            n += 1
        day += dt.timedelta(days=1)
    return "".join(lines).encode()
