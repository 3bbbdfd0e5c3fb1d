"""Switching from CSV to sync: a consultant with months of imports connects the same tracker and not
one entry is counted twice; the imported entries are adopted (their figures kept), new ones added."""

from __future__ import annotations

import csv
import datetime as dt
import io
from zoneinfo import ZoneInfo

from sqlalchemy import func, select

from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import ledger_reads
from hourtab.retainers import service as retainers
from hourtab.sync import service
from hourtab.timesheets.models import TimeEntry
from tests.factories import make_account
from tests.helpers.fake_trackers import Clockify, Toggl, iso, serving
from tests.helpers.paths import DATA
from tests.helpers.sync_runs import TOKEN, run_sync

METAPLM = DATA / "timetrackers/clockify/metaplm_Clockify_Time_Report_Detailed_01_01_2026-31_12_2026.csv"
FLORES = DATA / "timetrackers/toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_2017-08-31.csv"


def rows(path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def clock(text: str) -> int:
    h, m, s = (int(x) for x in text.split(":"))
    return h * 3600 + m * 60 + s


def ledger(session, retainer) -> dict[dt.date, int]:
    session.expire_all()
    return {p.period.start: p.used_s for p in ledger_reads.retainer_ledger(session, retainer).periods if p.used_s}


def counted(session, account) -> tuple[int, int]:
    """(entries, seconds) the account counts, and no two counted entries are the same work."""
    te = TimeEntry
    live = (te.account_id == account.id, te.status != "removed")
    n, total = session.execute(select(func.count(te.id), func.sum(te.duration_s)).where(*live)).one()
    twice = session.execute(select(te.start_at, te.duration_s, te.description).where(*live)
                            .group_by(te.start_at, te.duration_s, te.description).having(func.count(te.id) > 1)).all()
    assert twice == [], twice
    return n, int(total or 0)


def test_months_of_clockify_csv_then_sync_count_nothing_twice(db_session, box):
    account = make_account(db_session, "metaplm@example.com", timezone="Europe/Istanbul")
    istanbul = ZoneInfo("Europe/Istanbul")
    export = rows(METAPLM)
    with transaction(db_session):
        imported = import_file(db_session, account, METAPLM.read_bytes(), METAPLM.name, timezone="Europe/Istanbul")
        retainer = retainers.create_retainer(db_session, account, "Baykar", "Baykar Teknoloji", retainers.parse_terms(
            retainers.TermsInput(hours="160", start="2026-01-01", timezone="Europe/Istanbul")))
    assert imported.new == len(export) == 42
    months = {dt.datetime.strptime(r["Start Date"], "%d/%m/%Y").month for r in export}
    assert len(months) >= 3                              # months of history, not a week
    before, (entries_before, seconds_before) = ledger(db_session, retainer), counted(db_session, account)

    fake = Clockify(TOKEN)
    fake.user.update(name=export[0]["User"])
    fake.user["settings"]["timeZone"] = "Europe/Istanbul"
    ids = []
    for r in export:   # the same work, as the tracker's API lists it
        start = dt.datetime.strptime(f"{r['Start Date']} {r['Start Time']}", "%d/%m/%Y %H:%M:%S").replace(tzinfo=istanbul)
        ids.append(fake.add(start, clock(r["Duration (h)"]), r["Description"], project=r["Project"], client=r["Client"]))
        e = fake.entries[ids[-1]]
        e["task"] = {"id": "t", "name": r["Task"]} if r["Task"] else None
        e["tags"], e["billable"] = [], r["Billable"] == "Yes"
    fresh = dt.datetime(2026, 11, 30, 9, 0, tzinfo=istanbul)
    fake.add(fresh, 5400, "Design review", project="Baykar Teknoloji Yerinde Çalışma", client="Baykar Teknoloji")
    fake.add(fresh + dt.timedelta(hours=3), 1800, "Notes", project="Baykar Teknoloji Yerinde Çalışma",
             client="Baykar Teknoloji")

    with serving(clockify=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "clockify", TOKEN, api_url=trackers.url)
        first = run_sync(db_session, connection.id, box)
        assert (first["adopted"], first["new"], first["changed"], first["removed"]) == (42, 2, 0, 0)
        entries_after, seconds_after = counted(db_session, account)
        assert (entries_after, seconds_after) == (entries_before + 2, seconds_before + 5400 + 1800)
        after = ledger(db_session, retainer)
        november = dt.date(2026, 11, 1)
        assert after == {**before, november: before.get(november, 0) + 7200}   # history untouched

        # From now on the tracker is the truth for adopted entries too.
        fake.edit(ids[0], clock(export[0]["Duration (h)"]) + 900)
        with transaction(db_session):
            connection.cursor = {**connection.cursor, "full_at": "2000-01-01T00:00:00+00:00"}
        second = run_sync(db_session, connection.id, box)
        assert (second["changed"], second["new"], second["adopted"]) == (1, 0, 0)
        assert counted(db_session, account) == (entries_after, seconds_after + 900)


def test_toggl_csv_read_in_the_wrong_zone_is_still_adopted(db_session, box):
    """The export was imported as UTC while the tracker's profile is Berlin: matched on the wall clock."""
    account = make_account(db_session, "flores@example.com", timezone="UTC")
    berlin = ZoneInfo("Europe/Berlin")
    export = rows(FLORES)
    with transaction(db_session):
        import_file(db_session, account, FLORES.read_bytes(), FLORES.name)
        retainer = retainers.create_retainer(db_session, account, "Client 1", "Client 1", retainers.parse_terms(
            retainers.TermsInput(hours="100", start="2017-08-01", timezone="UTC")))
    before, totals = ledger(db_session, retainer), counted(db_session, account)

    fake = Toggl(TOKEN, projects=0)
    fake.me.update(fullname="Fernando Flores", timezone="Europe/Berlin")
    pairs = sorted({(r["Client"], r["Project"]) for r in export})
    clients = sorted({c for c, _ in pairs})
    fake.clients = [{**fake.clients[0], "id": 100 + i, "name": c} for i, c in enumerate(clients)]
    fake.projects = [{"id": 200 + i, "workspace_id": fake.workspace, "client_id": 100 + clients.index(c), "name": p}
                     for i, (c, p) in enumerate(pairs)]
    for r in export:
        start = dt.datetime.fromisoformat(f"{r['Start date']}T{r['Start time']}").replace(tzinfo=berlin)
        entry = fake.add(start, clock(r["Duration"]), r["Description"], project=pairs.index((r["Client"], r["Project"])))
        fake.entries[entry].update(tags=[t.strip() for t in r["Tags"].split(",") if t.strip()],
                                   billable=r["Billable"] == "Yes", at=iso(dt.datetime.now(dt.UTC)))

    with serving(toggl=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "toggl", TOKEN, api_url=trackers.url)
        first = run_sync(db_session, connection.id, box)
    assert (first["adopted"], first["new"]) == (len(export), 0)
    assert counted(db_session, account) == totals and ledger(db_session, retainer) == before


def test_summary_rows_that_cannot_be_adopted_are_reported(db_session, box):
    """A Clockify summary (a total a day) has no single entries to match: the sync says those days count twice."""
    account = make_account(db_session, "summary@example.com", timezone="UTC")
    summary = DATA / "exports/clockify_summary_by_day.csv"
    with transaction(db_session):
        import_file(db_session, account, summary.read_bytes(), summary.name, date_order="mdy")
        retainers.create_retainer(db_session, account, "Client X", "Client X", retainers.parse_terms(
            retainers.TermsInput(hours="100", start="2024-05-01", timezone="UTC")))
    fake = Clockify(TOKEN)
    fake.add(dt.datetime(2024, 5, 2, 9, tzinfo=dt.UTC), 3600, "Work")
    with serving(clockify=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "clockify", TOKEN, api_url=trackers.url)
        result = run_sync(db_session, connection.id, box)
    assert result["new"] == 1
    assert any("summary reports (one row a day)" in w and "count twice" in w for w in result["warnings"])


def test_on_adoption_the_apis_times_win_over_an_export_read_in_the_wrong_zone(db_session, box):
    """Imported as UTC while the tracker's profile is Berlin, a late entry on the last evening of a month
    landed in the next month; once the sync adopts it, the API's instant puts it back, and the closed
    month it returns to is marked revised."""
    account = make_account(db_session, "globex@example.com", timezone="UTC")
    berlin = ZoneInfo("Europe/Berlin")
    today = dt.datetime.now(dt.UTC).date()
    current = today.replace(day=1)
    previous = (current - dt.timedelta(days=1)).replace(day=1)
    start = dt.datetime.combine(current, dt.time(0, 20), tzinfo=berlin)       # the evening before, in UTC
    export = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
              f"Duration,Tags\nAda Lovelace,ada@example.com,Acme GmbH,Website,,Release,Yes,{current},00:20:00,"
              f"{current},01:00:00,00:40:00,\n").encode()
    with transaction(db_session):
        import_file(db_session, account, export, "toggl.csv")                  # read as UTC: the wrong month
        retainer = retainers.create_retainer(db_session, account, "Acme", "Acme GmbH", retainers.parse_terms(
            retainers.TermsInput(hours="100", start=previous.isoformat(), timezone="UTC")))
    assert ledger(db_session, retainer) == {current: 2400}
    fake = Toggl(TOKEN)
    fake.me.update(timezone="Europe/Berlin")
    fake.add(start, 2400, "Release")
    with serving(toggl=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "toggl", TOKEN, api_url=trackers.url)
        first = run_sync(db_session, connection.id, box)
    assert (first["adopted"], first["new"]) == (1, 0)
    assert ledger(db_session, retainer) == {previous: 2400}
    assert counted(db_session, account) == (1, 2400)
    assert [r["period_start"] for r in first["revised_periods"]] == [previous.isoformat()]
