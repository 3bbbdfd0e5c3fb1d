"""A tracker's CSV export imported after connecting the tracker counts nothing twice: its rows are
recognised as the synced entries (the preview says so) and not added again; rows imported twice
before this was so are repaired by the next sync. On both databases, for every tracker: Toggl (its
export read in another zone than the tracker's), Clockify, Kimai and a dated one (Harvest)."""

from __future__ import annotations

import datetime as dt
import io
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from sqlalchemy import func, select

from hourtab.core.db import transaction
from hourtab.imports import classify
from hourtab.imports.importer import import_file
from hourtab.sync import service
from hourtab.timesheets.models import TimeEntry
from tests.helpers.fake_trackers import Clockify, Harvest, Kimai, Toggl, parse, serving
from tests.helpers.sync_runs import TOKEN, at, ledger_by_period, make_retainer, months, run_sync


def toggl_export(fake: Toggl, zone: str) -> bytes:
    """Toggl's detailed report of the fake's entries, with the wall clock of ``zone``."""
    out = io.StringIO()
    out.write("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
              "Duration,Tags\n")
    for e in fake.entries.values():
        start = parse(e["start"]).astimezone(ZoneInfo(zone))
        end = start + dt.timedelta(seconds=e["duration"])
        h, rest = divmod(e["duration"], 3600)
        out.write(f"Ada Lovelace,ada@example.com,Acme GmbH,Website,,{e['description']},Yes,{start:%Y-%m-%d},"
                  f"{start:%H:%M:%S},{end:%Y-%m-%d},{end:%H:%M:%S},{h:02d}:{rest // 60:02d}:{rest % 60:02d},\n")
    return out.getvalue().encode()


def harvest_export(fake: Harvest) -> bytes:
    out = io.StringIO()
    out.write("Date,Client,Project,Project Code,Task,Notes,Hours,Billable?,First Name,Last Name\n")
    for e in fake.entries.values():
        out.write(f"{e['spent_date']},{e['client']['name']},{e['project']['name']},,Graphic Design,{e['notes']},"
                  f"{e['hours']},Yes,Bob,Powell\n")
    return out.getvalue().encode()


def clockify_export(fake: Clockify, zone: str) -> bytes:
    """Clockify's detailed report (day first, as the sample export), on the profile zone's clocks."""
    out = io.StringIO()
    out.write('"Project","Client","Description","Task","User","Email","Tags","Billable","Start Date","Start Time",'
              '"End Date","End Time","Duration (h)","Duration (decimal)"\n')
    for e in fake.entries.values():
        start = parse(e["timeInterval"]["start"]).astimezone(ZoneInfo(zone))
        end = parse(e["timeInterval"]["end"]).astimezone(ZoneInfo(zone))
        seconds = int((end - start).total_seconds())
        h, rest = divmod(seconds, 3600)
        out.write(f'"{e["project"]["name"]}","{e["project"]["clientName"]}","{e["description"]}","Bugfixing",'
                  f'"John Doe","john@example.com","Sprint1","Yes","{start:%d/%m/%Y}","{start:%H:%M:%S}",'
                  f'"{end:%d/%m/%Y}","{end:%H:%M:%S}","{h:02d}:{rest // 60:02d}:{rest % 60:02d}",'
                  f'"{seconds / 3600:.2f}"\n')
    return out.getvalue().encode()


def kimai_export(fake: Kimai) -> bytes:
    out = io.StringIO()
    out.write("Date,From,To,Duration,User,Customer,Project,Activity,Description\n")
    for e in fake.entries.values():
        start, end = parse(e["begin"]), parse(e["end"])     # the instance's zone, as its export shows
        out.write(f"{start:%Y-%m-%d},{start:%H:%M},{end:%H:%M},{e['duration']},Ada L.,"
                  f"{e['project']['customer']['name']},{e['project']['name']},Support,{e['description']}\n")
    return out.getvalue().encode()


def _counted(session, account) -> int:
    session.expire_all()
    return session.scalar(select(func.count(TimeEntry.id)).where(TimeEntry.account_id == account.id,
                                                                 TimeEntry.status != "removed"))


def _setup(db_session, account, name):
    """A connected tracker with a month of entries, synced; its export; the retainer they count for."""
    previous, current = months()
    if name == "toggl":
        fake = Toggl(TOKEN)
        for i in range(4):
            fake.add(at(current, 9 + i), 1800 + 60 * i, f"Work {i}")
        fake.add(at(previous, 23, 30), 3600, "Late")          # a month edge in the retainer's zone
        client = "Acme GmbH"
    elif name == "clockify":
        fake = Clockify(TOKEN)
        for i in range(3):
            fake.add(at(current, 9 + i), 1800 + 60 * i, f"Work {i}")
        fake.add(at(previous, 23, 30), 3600, "Late")
        client = "Client X"
    elif name == "kimai":   # Kimai's API names no zone: its instance keeps the consultant's (here New York)
        fake = Kimai(TOKEN, zone="America/New_York")
        for i in range(3):
            fake.add(at(current, 9 + i), 1800 + 60 * i, f"Work {i}")
        client = "Kimai GmbH"
    else:
        fake = Harvest(TOKEN)
        for i in range(4):
            fake.add(current + dt.timedelta(days=i), 1.5 + i, f"Work {i}")
        client = "ABC Corp"
    return fake, make_retainer(db_session, account, client)


EXPORTS = {"toggl": lambda fake: toggl_export(fake, "Europe/Berlin"), "harvest": harvest_export,
           "clockify": lambda fake: clockify_export(fake, "Europe/Belgrade"), "kimai": kimai_export}


@pytest.mark.parametrize("name", ["toggl", "clockify", "harvest", "kimai"])
def test_an_export_imported_after_connecting_is_recognised_and_not_counted_twice(db_session, account, box, name):
    fake, retainer = _setup(db_session, account, name)
    with serving(**{name: fake}) as trackers:
        extra = {"harvest_account": fake.account} if name == "harvest" else {}
        with transaction(db_session):
            connection = service.connect(db_session, account, box, name, TOKEN, api_url=trackers.url, **extra)
        assert run_sync(db_session, connection.id, box)["new"] == len(fake.entries)
    synced, ledger = _counted(db_session, account), ledger_by_period(db_session, retainer)
    # Exports written on the tracker profile's clocks (Berlin, Belgrade), read in the account's New York.
    data = EXPORTS[name](fake)
    options = {"date_order": "dmy"} if name == "clockify" else {}
    with transaction(db_session):
        preview = import_file(db_session, account, data, f"{name}.csv", dry_run=True, **options)
    assert (preview.new, preview.adopted) == (0, len(fake.entries))
    assert any("live sync of this tracker already brought" in n for n in preview.notes)
    assert preview.diff["adopted_count"] == len(fake.entries)
    with transaction(db_session):
        imported = import_file(db_session, account, data, f"{name}.csv", **options)
    assert (imported.new, imported.adopted) == (0, len(fake.entries))
    assert _counted(db_session, account) == synced and ledger_by_period(db_session, retainer) == ledger


def test_rows_imported_twice_before_are_repaired_by_the_next_sync(db_session, account, box, monkeypatch):
    fake, retainer = _setup(db_session, account, "harvest")
    with serving(harvest=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "harvest", TOKEN, api_url=trackers.url,
                                         harvest_account=fake.account)
        run_sync(db_session, connection.id, box)
        ledger = ledger_by_period(db_session, retainer)
        # As the importer did before it recognised such rows: every row new, every hour counted twice.
        monkeypatch.setattr(classify, "synced_twins", lambda s, a, f, frame: np.full(len(frame), -1))
        with transaction(db_session):
            assert import_file(db_session, account, harvest_export(fake), "harvest.csv").new == len(fake.entries)
        assert ledger_by_period(db_session, retainer) == {k: 2 * v for k, v in ledger.items()}
        repaired = run_sync(db_session, connection.id, box)
    assert repaired["duplicates_removed"] == len(fake.entries)
    assert ledger_by_period(db_session, retainer) == ledger
