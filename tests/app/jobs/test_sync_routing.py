"""Issue 24 item 3 with issue 19 items 1, 2 and 5: a synced entry obeys the same truth as a CSV import.

A Toggl workspace with two clients (and a project without one) synced into an account with a retainer
per client, in different zones from the tracker profile's (Europe/Berlin): each client's entries count
against its own retainer and only there, each dated in its retainer's zone; an entry deleted in the
tracker from a closed period marks that period revised on the public page, the JSON and the feed; an
entry moved to the other client's project in the tracker moves to that client's retainer, and both
closed periods say so. Revisions are the retainers' own records (``period_revisions``), read back
through the client's pages.
"""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from hourtab.core.db import transaction
from hourtab.retainers.models import PeriodRevision
from hourtab.retainers.presentation import format_hours
from hourtab.sync import service
from hourtab.sync.models import Connection, SyncedEntry
from hourtab.sync.token_box import TokenBox
from hourtab.timesheets.models import TimeEntry
from tests.helpers.consultant_forms import make_retainers
from tests.helpers.documents import html_words
from tests.helpers.fake_trackers import Toggl, parse, serving
from tests.helpers.sync_runs import TOKEN, ZONE, at, months, run_sync

ATOM = {"a": "http://www.w3.org/2005/Atom"}
TOKYO = ZoneInfo("Asia/Tokyo")
ACME, GLOBEX = "Acme GmbH", "Globex"
ZONES = {ACME: ZONE, GLOBEX: TOKYO}
H = 3600


def tokyo(day: dt.date, hour: int) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour), tzinfo=TOKYO)


def workspace() -> tuple[Toggl, dict[str, int]]:
    """Project 0 is Acme's, project 1 Globex's (the fake alternates clients), project 3 has no client."""
    fake = Toggl(TOKEN)
    fake.projects.append({**fake.projects[0], "id": 179999998, "name": "Internal", "client_id": None, "cid": None})
    previous, current = months()
    ids = {
        "kickoff": fake.add(at(previous + dt.timedelta(days=4), 9), 2 * H, "Acme kickoff", project=0),
        # 23:30 in New York is already the next day in Berlin: Acme's retainer dates it in New York.
        "late": fake.add(at(previous + dt.timedelta(days=9), 23, 30), H, "Acme late call", project=0),
        # 20:00 in New York is the next morning in Tokyo.
        "migration": fake.add(at(previous + dt.timedelta(days=14), 20), 5400, "Acme migration", project=0),
        "now": fake.add(at(current, 10), H, "Acme this month", project=0),
        "audit": fake.add(tokyo(previous + dt.timedelta(days=5), 10), 3 * H, "Globex audit", project=1),
        "review": fake.add(tokyo(previous + dt.timedelta(days=20), 8), 2 * H, "Globex review", project=1),
        "internal": fake.add(at(previous + dt.timedelta(days=6), 22), 1800, "Internal tooling", project=3),
    }
    return fake, ids


@pytest.fixture
def synced(app, logged_in):
    """The two retainers, the fake workspace served, a Toggl connection synced once (the backfill)."""
    from app.db import get_db
    from hourtab.core.accounts import find_account

    previous, _ = months()
    made = make_retainers(app, [(ACME, ZONE.key), (GLOBEX, TOKYO.key)], start=previous.isoformat(), hours="200")
    fake, ids = workspace()
    box = TokenBox.from_settings("", "a secret key for the tests")
    with serving(toggl=fake) as trackers, app.app_context():
        db = get_db()
        with transaction(db):
            connection = service.connect(db, find_account(db, "consultant@example.com"), box, "toggl", TOKEN,
                                         api_url=trackers.url)
        assert connection.timezone == "Europe/Berlin"
        first = run_sync(db, connection.id, box)
        assert (first["new"], first["revised_periods"]) == (len(ids), [])  # history loaded, not revised
        yield {"app": app, "db": db, "box": box, "fake": fake, "ids": ids, "retainers": made,
               "connection": connection.id, "public": app.test_client()}


def periods(public, token: str) -> dict[str, dict]:
    return {p["label"]: p for p in json.loads(public.get(f"/h/{token}.json").data)["periods"]}


def label(day: dt.date) -> str:
    return f"{day:%b %Y}"


def entries(fake: Toggl, client: str) -> list[dict]:
    """The tracker's live entries on the client's projects."""
    names = {c["id"]: c["name"] for c in fake.clients}
    mine = {p["id"] for p in fake.projects if names.get(p["client_id"]) == client}
    return [e for e in fake.entries.values() if e["project_id"] in mine and not e["server_deleted_at"]]


def descriptions(fake: Toggl, client: str) -> set[str]:
    return {e["description"] for e in entries(fake, client)}


def entry_of(db, connection_id: int, external_id: int) -> TimeEntry:
    db.expire_all()
    return db.scalar(select(TimeEntry).join(SyncedEntry, SyncedEntry.entry_id == TimeEntry.id).where(
        SyncedEntry.connection_id == connection_id, SyncedEntry.external_id == str(external_id)))


def test_each_clients_entries_count_on_its_own_retainer_dated_in_its_zone(synced):
    fake, public, db = synced["fake"], synced["public"], synced["db"]
    previous, _ = months()
    everything = descriptions(fake, ACME) | descriptions(fake, GLOBEX) | {"Internal tooling"}
    for client, (_, token) in synced["retainers"].items():
        mine = descriptions(fake, client)
        page = html_words(public.get(f"/h/{token}").get_data(as_text=True))
        csv_text = public.get(f"/h/{token}.csv").get_data(as_text=True)
        assert all(d in csv_text for d in mine)   # the page lists the open period's entries only
        assert [d for d in everything - mine if d in page or d in csv_text] == []   # no other client's work
        # The closed month, in the retainer's zone: every second of the client's entries started in it.
        expected = sum(e["duration"] for e in entries(fake, client)
                       if parse(e["start"]).astimezone(ZONES[client]).date().replace(day=1) == previous)
        assert periods(public, token)[label(previous)]["used_seconds"] == expected > 0

    # Dated as a CSV's rows are read: in the zone of the retainer the entry's rules match, else the
    # upload's (the connection's: the tracker profile's zone).
    rows = db.execute(select(TimeEntry.description, TimeEntry.start_at, TimeEntry.local_date, TimeEntry.timezone)
                      .join(SyncedEntry, SyncedEntry.entry_id == TimeEntry.id)).all()
    zone_of = {d: ZONES[c].key for c in (ACME, GLOBEX) for d in descriptions(fake, c)} | {
        "Internal tooling": "Europe/Berlin"}
    assert "Acme this month" in html_words(public.get(f"/h/{synced['retainers'][ACME][1]}").get_data(as_text=True))
    assert {d: z for d, _, _, z in rows} == zone_of
    assert all(day == start.astimezone(ZoneInfo(zone)).date() for _, start, day, zone in rows)
    late = entry_of(db, synced["connection"], synced["ids"]["late"])
    assert late.local_date == previous + dt.timedelta(days=9)   # Berlin would say the 10th


def test_an_entry_deleted_in_the_tracker_marks_its_closed_period_revised(synced):
    fake, public, db = synced["fake"], synced["public"], synced["db"]
    rid, token = synced["retainers"][ACME]
    previous, _ = months()
    was = periods(public, token)[label(previous)]["used_seconds"]

    fake.delete(synced["ids"]["kickoff"])
    result = run_sync(db, synced["connection"], synced["box"])
    assert result["removed"] == 1
    assert result["revised_periods"] == [{"retainer_id": rid, "period_start": previous.isoformat(),
                                          "was_s": was, "now_s": was - 2 * H}]

    today = dt.datetime.now(ZONE).date()
    revised = periods(public, token)[label(previous)]
    assert revised["used_seconds"] == was - 2 * H
    assert {k: revised["revised"][k] for k in ("revision", "reason", "was_used_seconds", "used_seconds", "on")} == {
        "revision": 1, "reason": "sync", "was_used_seconds": was, "used_seconds": was - 2 * H,
        "on": today.isoformat()}
    page = html_words(public.get(f"/h/{token}").get_data(as_text=True))
    assert (f"{label(previous)} revised on {today:%a} {today.day} {today:%b} {today.year} "
            f"(was {format_hours(was)} h)") in page
    feed = ET.fromstring(public.get(f"/h/{token}/feed.atom").data)
    titles = [e.findtext("a:title", namespaces=ATOM) for e in feed.findall("a:entry", ATOM)]
    assert f"{label(previous)} revised: {format_hours(was - 2 * H)} h used (was {format_hours(was)} h)" in titles
    # Recorded by the retainers' revisions, against the connection's upload; Globex is untouched.
    upload_id = db.get(Connection, synced["connection"]).upload_id
    assert db.execute(select(PeriodRevision.retainer_id, PeriodRevision.reason, PeriodRevision.upload_id)).all() == [
        (rid, "sync", upload_id)]


def test_an_entry_moved_to_another_clients_project_moves_to_that_retainer(synced):
    fake, public, db = synced["fake"], synced["public"], synced["db"]
    (acme, acme_token), (globex, globex_token) = synced["retainers"][ACME], synced["retainers"][GLOBEX]
    previous, _ = months()
    acme_was = periods(public, acme_token)[label(previous)]["used_seconds"]
    globex_was = periods(public, globex_token)[label(previous)]["used_seconds"]

    moved = synced["ids"]["migration"]
    fake.edit(moved, project_id=fake.projects[1]["id"], pid=fake.projects[1]["id"], description="Globex migration")
    result = run_sync(db, synced["connection"], synced["box"])
    assert (result["changed"], result["new"], result["removed"]) == (1, 0, 0)

    assert "Globex migration" in public.get(f"/h/{globex_token}.csv").get_data(as_text=True)
    assert "migration" not in public.get(f"/h/{acme_token}.csv").get_data(as_text=True)
    acme_now, globex_now = (periods(public, t)[label(previous)] for t in (acme_token, globex_token))
    assert (acme_now["used_seconds"], globex_now["used_seconds"]) == (acme_was - 5400, globex_was + 5400)
    # Both closed periods changed, and both say so.
    assert (acme_now["revised"]["was_used_seconds"], globex_now["revised"]["was_used_seconds"]) == (acme_was,
                                                                                                  globex_was)
    assert sorted((r["retainer_id"], r["was_s"], r["now_s"]) for r in result["revised_periods"]) == [
        (acme, acme_was, acme_was - 5400), (globex, globex_was, globex_was + 5400)]
    # It is now Globex's: dated in Tokyo, where 20:00 in New York is the next morning.
    entry = entry_of(db, synced["connection"], moved)
    assert (entry.timezone, entry.local_date) == (TOKYO.key, previous + dt.timedelta(days=15))
