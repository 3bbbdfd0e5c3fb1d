"""Toggl Track: backfill, increments with edits and deletions, running timers, pages, 429 — on both
databases, with the ledger checked to the second per period in the retainer's zone."""

from __future__ import annotations

import datetime as dt

from hourtab.core.db import transaction
from hourtab.sync import service
from tests.helpers.fake_trackers import Toggl, parse, serving
from tests.helpers.sync_runs import (
    TOKEN,
    ZONE,
    at,
    by_month,
    ledger_by_period,
    make_retainer,
    months,
    run_sync,
)

ACME = "Acme GmbH"


def expected(fake: Toggl) -> dict[dt.date, int]:
    """Acme's stopped, undeleted entries per month of their start in New York."""
    acme = {p["id"] for p in fake.projects if p["client_id"] == fake.clients[0]["id"]}
    return by_month((parse(e["start"]).astimezone(ZONE).date(), e["duration"]) for e in fake.entries.values()
                    if e["project_id"] in acme and not e["server_deleted_at"] and e["duration"] >= 0)


def populate(fake: Toggl) -> dict[str, int]:
    previous, current = months()
    ids = {}
    for i in range(40):
        day = previous + dt.timedelta(days=i % 27)
        ids[f"prev{i}"] = fake.add(at(day, 8 + i // 27), 1800 + 37 * i, f"Task {i}", project=i % 4)
    # 23:30 on the last day of the closed month in New York is already the next month in UTC.
    ids["edge"] = fake.add(at(current - dt.timedelta(days=1), 23, 30), 2700, "Late call", project=0)
    for i in range(6):
        ids[f"cur{i}"] = fake.add(at(current, 1 + i % 3, 10 * i), 600 + 61 * i, f"Now {i}", project=0)
    ids["running"] = fake.add(at(current, 5), None, "Timer", project=0, running=True)
    return ids


def test_toggl_backfill_increment_running_pages_and_429(db_session, account, box):
    fake = Toggl(TOKEN, projects=205)      # more projects than one page (200)
    ids = populate(fake)
    retainer = make_retainer(db_session, account, ACME)
    previous, current = months()
    with serving(toggl=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "toggl", TOKEN, api_url=trackers.url)
        assert (connection.workspace, connection.tracker_user, connection.timezone) == \
            ("4810101", "Ada Lovelace", "Europe/Berlin")
        fake.fail(429, {"Retry-After": "1"}, path="/me/time_entries")

        assert run_sync(db_session, connection.id, box)["status"] == "rate_limited"   # not slept on
        first = run_sync(db_session, connection.id, box)
        assert first["status"] == "done" and first["full"]
        assert (first["new"], first["running"], first["changed"], first["removed"]) == (47, 1, 0, 0)
        assert ledger_by_period(db_session, retainer) == expected(fake)
        # The edge entry counts in the closed month, where it is in New York.
        assert expected(fake)[previous] > 0 and expected(fake)[current] > 0
        asked = [r for r in fake.requests if r.path == "/api/v9/me/time_entries"]
        assert len(fake.entry_requests("/projects")) == 2              # both pages of projects
        assert len([r for r in asked if r.status == 200 and "start_date" in r.query]) >= 2   # a month a request

        fake.edit(ids["cur1"], duration=4000)
        fake.delete(ids["cur2"])
        fake.stop(ids["running"], 1200)
        second = run_sync(db_session, connection.id, box)
        assert not second["full"]
        assert (second["new"], second["changed"], second["removed"], second["running"]) == (1, 1, 1, 0)
        assert "since" in fake.requests[-1].query
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert second["revised_periods"] == []                    # all three are in the open period
        assert len(fake.entry_requests("/projects")) == 2         # names kept: the increment asked 1 thing

        gone = fake.entries[ids["prev0"]]["duration"]
        before = ledger_by_period(db_session, retainer)[previous]
        fake.delete(ids["prev0"])
        third = run_sync(db_session, connection.id, box)
        assert third["removed"] == 1
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert third["revised_periods"] == [{"retainer_id": retainer.id, "period_start": previous.isoformat(),
                                             "was_s": before, "now_s": before - gone}]

        # A project created since: its entry brings the names again (clients and both pages of projects).
        fake.projects.append({**fake.projects[0], "id": 179999999, "name": "New project"})
        fake.add(at(current, 3, 30), 777, "On the new project", project=len(fake.projects) - 1)
        again = run_sync(db_session, connection.id, box)
        assert (again["new"], again["changed"], again["removed"]) == (1, 0, 0)
        assert len(fake.entry_requests("/projects")) == 4
        assert ledger_by_period(db_session, retainer) == expected(fake)
