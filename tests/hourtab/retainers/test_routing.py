"""Issue 19: the retainers' rules decide where every entry counts, whatever retainer an upload is "for".

Real multi-client exports (the 3-client Clockify sample, the 2-client Toggl sample) and hand-made
ones with 13 and 14 clients and rows without a client, on both databases. Expectations come from
reading the files with ``csv`` (``multi_client.by_client``), not from HourTab's reader.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from sqlalchemy import func, select

from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import PeriodRevision
from tests.factories import make_account
from tests.helpers.multi_client import CLOCKIFY, KIMAI14, TOGGL, TOGGL13, by_client


def _terms(start="2026-01-01", timezone="UTC", hours="40"):
    return service.parse_terms(service.TermsInput(hours=hours, start=start, timezone=timezone))


def _retainer(db, account, client, **terms):
    with transaction(db):
        return service.create_retainer(db, account, f"{client} retainer", client, _terms(**terms))


def _held(db, retainer) -> tuple[int, int]:
    frame = service.entries_frame(db, retainer.id)
    return len(frame), int(frame["duration_s"].sum())


@pytest.fixture
def pro(db_session):
    return make_account(db_session, "ada@example.com", "pro")


def test_clockify_export_for_one_retainer_counts_only_that_clients_rows(db_session, pro):
    rows = by_client(CLOCKIFY)
    baykar = _retainer(db_session, pro, "Baykar Teknoloji")
    zenvo = _retainer(db_session, pro, "Zenvo Automotive")
    with transaction(db_session):
        result = import_file(db_session, pro, CLOCKIFY.read_bytes(), CLOCKIFY.name, retainer_id=baykar.id)
    assert _held(db_session, baykar) == (rows["Baykar Teknoloji"].count, rows["Baykar Teknoloji"].seconds)
    assert rows["Baykar Teknoloji"].count == 20
    assert _held(db_session, zenvo) == (rows["Zenvo Automotive"].count, rows["Zenvo Automotive"].seconds)
    assert service.unmatched_entries(db_session, pro)[0] == rows["BMC Power"].count == 1
    # What the import said beforehand is what it did.
    routing = {r["name"]: r for r in result.routing["retainers"]}
    assert routing["Baykar Teknoloji retainer"]["entries"] == 20
    assert routing["Zenvo Automotive retainer"]["entries"] == 21
    assert routing["Baykar Teknoloji retainer"]["default_entries"] == 0
    assert [(g["client"], g["entries"]) for g in result.routing["unassigned"]["groups"]] == [("BMC Power", 1)]


def test_toggl_export_for_the_second_client_leaves_the_first_to_a_retainer_made_later(db_session, pro):
    rows = by_client(TOGGL)
    second = _retainer(db_session, pro, "Client 2", start="2017-08-01")
    with transaction(db_session):
        import_file(db_session, pro, TOGGL.read_bytes(), TOGGL.name, retainer_id=second.id)
    assert _held(db_session, second) == (rows["Client 2"].count, rows["Client 2"].seconds)
    assert set(service.entries_frame(db_session, second.id)["project"]) == rows["Client 2"].projects
    first = _retainer(db_session, pro, "Client 1", start="2017-08-01")  # made after the import
    assert _held(db_session, first) == (rows["Client 1"].count, rows["Client 1"].seconds) == (168, rows["Client 1"].seconds)
    assert service.unmatched_entries(db_session, pro)[0] == 0


def test_rows_without_client_or_project_default_to_the_chosen_retainer_and_nothing_else(db_session, pro):
    rows = by_client(TOGGL13)
    mine = _retainer(db_session, pro, "Kestrel", start="2026-09-01")
    other = _retainer(db_session, pro, "Dunmore", start="2026-09-01")
    with transaction(db_session):
        result = import_file(db_session, pro, TOGGL13.read_bytes(), TOGGL13.name, retainer_id=mine.id)
    blank, kestrel = rows[""], rows["Kestrel"]
    assert _held(db_session, mine) == (kestrel.count + blank.count, kestrel.seconds + blank.seconds)
    assert _held(db_session, other) == (rows["Dunmore"].count, rows["Dunmore"].seconds)
    counted = service.entries_frame(db_session, mine.id)
    assert set(counted["project"]) == kestrel.projects | {""}
    # A row with a project but no client says something: it is not sent to the chosen retainer.
    assert "Internal tooling" not in set(counted["project"])
    nowhere = sum(r.count for c, r in rows.items() if c not in ("", "Kestrel", "Dunmore"))
    assert service.unmatched_entries(db_session, pro)[0] == nowhere
    assert result.routing["defaulted"]["entries"] == blank.count > 0
    assert result.routing["unassigned"]["entries"] == nowhere
    groups = {(g["client"], g["project"]) for g in result.routing["unassigned"]["groups"]}
    assert ("", "Internal tooling") in groups and len({c for c, _ in groups}) == 12  # 11 other clients, and none


def test_kimai_fourteen_customers_for_magrette(db_session, pro):
    rows = by_client(KIMAI14)
    magrette = _retainer(db_session, pro, "Magrette", start="2026-09-01")
    with transaction(db_session):
        import_file(db_session, pro, KIMAI14.read_bytes(), KIMAI14.name, retainer_id=magrette.id)
    assert _held(db_session, magrette) == (rows["Magrette"].count, rows["Magrette"].seconds)
    assert len(rows) == 14
    assert service.unmatched_entries(db_session, pro)[0] == sum(r.count for c, r in rows.items() if c != "Magrette")


def test_rule_edits_route_every_entry_again_and_revise_closed_periods(db_session, pro):
    rows = by_client(CLOCKIFY)
    baykar = _retainer(db_session, pro, "Baykar Teknoloji")
    zenvo = _retainer(db_session, pro, "Zenvo Automotive")
    with transaction(db_session):
        import_file(db_session, pro, CLOCKIFY.read_bytes(), CLOCKIFY.name, retainer_id=baykar.id)
    jan = ledger_reads.retainer_ledger(db_session, baykar).periods[0]
    with transaction(db_session):
        service.update_retainer(db_session, pro, baykar.id, rules=MatchRules(clients=("BMC Power",)))
    # Released: the upload was imported "for" this retainer, and that no longer keeps them there.
    assert _held(db_session, baykar) == (1, rows["BMC Power"].seconds)
    assert service.unmatched_entries(db_session, pro)[0] == rows["Baykar Teknoloji"].count
    with transaction(db_session):
        service.update_retainer(db_session, pro, zenvo.id,
                                rules=MatchRules(clients=("Zenvo Automotive", "baykar teknoloji ")))
    assert _held(db_session, zenvo) == (41, rows["Zenvo Automotive"].seconds + rows["Baykar Teknoloji"].seconds)
    assert service.unmatched_entries(db_session, pro)[0] == 0
    # January 2026 closed long ago: each change to it is recorded with the figure it had.
    revisions = db_session.scalars(select(PeriodRevision).where(PeriodRevision.retainer_id == baykar.id)
                                   .order_by(PeriodRevision.period_start)).all()
    first = revisions[0]
    assert (first.period_start, first.number, first.reason) == (dt.date(2026, 1, 1), 1, "rules")
    assert (first.was_used_s, first.was_entries) == (jan.used_s, jan.entry_count)
    assert first.used_s == rows["BMC Power"].seconds and first.entries == 1
    assert db_session.scalar(select(func.count()).select_from(PeriodRevision)
                             .where(PeriodRevision.retainer_id == zenvo.id)) == 3  # Jan, Feb, Mar gained Baykar


def test_archived_retainer_keeps_its_history_but_takes_nothing_new(db_session, pro):
    baykar = _retainer(db_session, pro, "Baykar Teknoloji")
    with transaction(db_session):
        import_file(db_session, pro, CLOCKIFY.read_bytes(), CLOCKIFY.name, retainer_id=baykar.id)
        service.set_active(db_session, pro, baykar.id, False)
    assert _held(db_session, baykar)[0] == 20
    late = CLOCKIFY.read_bytes().replace(b'"19/01/2026","11:00:00"', b'"19/01/2026","10:00:00"', 1)
    with transaction(db_session):
        import_file(db_session, pro, late, "late.csv")
    assert _held(db_session, baykar)[0] == 20


def test_every_row_is_read_on_the_exporters_clock_whatever_retainer_it_counts_on(db_session, pro):
    """Account in Tokyo, retainers in Istanbul and New York: the export's clock is the exporter's
    (here the account's), for every row; each retainer then dates the same instants in its own zone."""
    with transaction(db_session):
        pro.timezone = "Asia/Tokyo"
    baykar = _retainer(db_session, pro, "Baykar Teknoloji", timezone="Europe/Istanbul")
    _retainer(db_session, pro, "Zenvo Automotive", timezone="America/New_York")
    with transaction(db_session):
        result = import_file(db_session, pro, CLOCKIFY.read_bytes(), CLOCKIFY.name)
    assert [(z["zone"], z["entries"]) for z in result.report.zones] == [("Asia/Tokyo", 42)]
    assert result.routing["mixed_zones"] is False
    from hourtab.timesheets.models import TimeEntry

    stored = pd.DataFrame([(e.client, e.start_at, e.timezone, e.local_date) for e in
                           db_session.scalars(select(TimeEntry).order_by(TimeEntry.source_line))],
                          columns=["client", "start_at", "timezone", "local_date"])
    assert set(stored["timezone"]) == {"Asia/Tokyo"}
    tokyo = ZoneInfo("Asia/Tokyo")
    for client in ("Baykar Teknoloji", "Zenvo Automotive", "BMC Power"):
        mine = stored[stored["client"] == client]
        shown = sorted((f"{s.astimezone(tokyo):%d/%m/%Y}", f"{s.astimezone(tokyo):%H:%M}") for s in mine["start_at"])
        assert shown == sorted(by_client(CLOCKIFY)[client].starts)
    # Istanbul's retainer counts each instant on Istanbul's day: a Tokyo morning is the evening before there.
    db_session.expire_all()
    ledger = ledger_reads.retainer_ledger(db_session, baykar)
    mine = stored[stored["client"] == "Baykar Teknoloji"]
    istanbul = sorted(s.astimezone(ZoneInfo("Europe/Istanbul")).date() for s in mine["start_at"])
    assert sorted(ledger.entries["day"].dt.date) == istanbul
    # Importing again changes nothing: the same rows are read in the same zones.
    with transaction(db_session):
        again = import_file(db_session, pro, CLOCKIFY.read_bytes(), CLOCKIFY.name)
    assert (again.new, again.changed, again.unchanged) == (0, 0, 42)
