"""Shared set-up for the retainer and public-page tests: a consultant, a real import, a retainer."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hourtab import accounts
from hourtab.db import transaction
from hourtab.retainers import service
from hourtab.timesheets.importer import import_file

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE = DATA / "toggl_floresfdev_2017-08.csv"
AUG_20 = dt.datetime(2017, 8, 20, 12, tzinfo=dt.UTC)
TOGGL_HEADER = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
                "Duration,Tags,Amount ()\n")


def toggl_csv(rows: list[tuple[str, str, str, str, str]]) -> bytes:
    """A Toggl-shaped export: (client, description, date, start time, duration hh:mm:ss) per row."""
    lines = [TOGGL_HEADER]
    for client, desc, day, start, dur in rows:
        quoted = '"' + desc.replace('"', '""') + '"'
        h, m, s = (int(x) for x in dur.split(":"))
        end = (dt.datetime.fromisoformat(f"{day}T{start}") + dt.timedelta(hours=h, minutes=m, seconds=s))
        lines.append(f"Ada,ada@example.com,{client},Project A,,{quoted},Yes,{day},{start},"
                     f"{end:%Y-%m-%d},{end:%H:%M:%S},{dur},,\n")
    return "".join(lines).encode("utf-8")


def setup_retainer(session, *, hours: str = "160", plan: str = "free", data: bytes | None = None,
                   email: str = "ada@example.com", **terms) -> tuple[accounts.Account, object]:
    """An account with the real Toggl sample imported and a retainer for "Client 1"."""
    with transaction(session):
        # A stored account without a usable password: Argon2 costs ~1 s here and no test logs in as it.
        account = accounts.Account(email=email, password_hash="!", plan=plan, display_name="Ada Consultant",
                                   contact="ada@example.com")
        session.add(account)
        session.flush()
        import_file(session, account, data if data is not None else SAMPLE.read_bytes(), "export.csv")
        retainer = service.create_retainer(
            session, account, "ML platform retainer", "Client 1",
            service.parse_terms(service.TermsInput(hours=hours, start=terms.pop("start", "2017-08-01"),
                                                   timezone=terms.pop("timezone", "UTC"), **terms)))
    return account, retainer
