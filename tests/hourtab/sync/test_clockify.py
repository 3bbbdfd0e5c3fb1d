"""Clockify: backfill, increments with edits and deletions, running timers, pages, 429 — on both
databases, with the ledger checked to the second per period in the retainer's zone."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select, update

from hourtab.core.db import transaction
from hourtab.sync import service
from hourtab.sync.clients.clockify import PAGE_SIZE, iso_duration_seconds
from hourtab.sync.errors import ChooseWorkspace
from hourtab.sync.models import Connection
from hourtab.timesheets.models import TimeEntry
from tests.helpers.fake_trackers import Clockify, parse, serving
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

CLIENT = "Client X"


def expected(fake: Clockify) -> dict[dt.date, int]:
    return by_month((parse(e["timeInterval"]["start"]).astimezone(ZONE).date(),
                     int((parse(e["timeInterval"]["end"]) - parse(e["timeInterval"]["start"])).total_seconds()))
                    for e in fake.entries.values()
                    if e["timeInterval"]["end"] and e["project"]["clientName"] == CLIENT)


def populate(fake: Clockify, n: int) -> dict[str, str]:
    previous, current = months()
    ids = {}
    for i in range(n):
        day = previous + dt.timedelta(days=i % 27)
        client = CLIENT if i % 5 else "Other client"
        ids[f"prev{i}"] = fake.add(at(day, 6 + i // 27 % 14, i % 60), 900 + 13 * i, f"Task {i}", client=client)
    ids["edge"] = fake.add(at(current - dt.timedelta(days=1), 23, 30), 2700, "Late call")
    for i in range(6):
        ids[f"cur{i}"] = fake.add(at(current, 1 + i % 3, 10 * i), 600 + 61 * i, f"Now {i}")
    ids["running"] = fake.add(at(current, 5), None, "Timer", running=True)
    return ids


def test_iso_durations_as_clockify_writes_them():
    assert [iso_duration_seconds(v) for v in ("PT1H30M", "PT45S", "PT2H0M5S", "P1DT1H", "PT0S", "8000", "")] == \
        [5400, 45, 7205, 90000, 0, None, None]


def test_clockify_backfill_increment_running_pages_and_429(db_session, account, box):
    fake = Clockify(TOKEN)
    ids = populate(fake, 2 * PAGE_SIZE + 50)       # three pages of entries
    retainer = make_retainer(db_session, account, CLIENT)
    previous, current = months()
    with serving(clockify=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "clockify", TOKEN, api_url=trackers.url)
        assert (connection.workspace, connection.tracker_user, connection.timezone) == \
            ("64a687e29ae1f428e7ebe303", "John Doe", "Europe/Belgrade")
        fake.fail(429, {"Retry-After": "1"}, path="/time-entries")

        throttled = run_sync(db_session, connection.id, box)   # not slept on: due again when Clockify allows
        assert throttled["status"] == "rate_limited" and "wait 1 s" in throttled["error"]
        assert db_session.scalar(select(func.count()).select_from(TimeEntry)) == 0
        first = run_sync(db_session, connection.id, box)
        total = len(fake.entries)
        assert (first["new"], first["running"], first["removed"]) == (total - 1, 1, 0)
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert expected(fake)[previous] and expected(fake)[current]
        asked = [r for r in fake.requests if r.path.endswith("/time-entries")]
        assert [r.query["page"] for r in asked if r.status == 200] == ["1", "2", "3"]
        assert all(r.query["hydrated"] == "true" for r in asked)

        fake.edit(ids["cur1"], 4000)
        fake.delete(ids["cur2"])
        fake.stop(ids["running"], 1200)
        second = run_sync(db_session, connection.id, box)
        assert not second["full"]
        assert (second["new"], second["changed"], second["removed"], second["running"]) == (1, 1, 1, 0)
        assert second["unchanged"] > 0          # the window (this month) is read again every time
        assert ledger_by_period(db_session, retainer) == expected(fake)

        # A deletion in the closed month is outside the window: the daily full re-read finds it.
        fake.delete(ids["prev1"])
        gone = 900 + 13
        before = ledger_by_period(db_session, retainer)[previous]
        assert run_sync(db_session, connection.id, box)["removed"] == 0
        with transaction(db_session):
            db_session.execute(update(Connection).where(Connection.id == connection.id).values(
                cursor={**connection.cursor, "full_at": "2000-01-01T00:00:00+00:00"}))
        full = run_sync(db_session, connection.id, box)
        assert full["full"] and full["removed"] == 1
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert full["revised_periods"] == [{"retainer_id": retainer.id, "period_start": previous.isoformat(),
                                            "was_s": before, "now_s": before - gone}]


def test_a_token_with_several_workspaces_must_choose(db_session, account, box):
    fake = Clockify(TOKEN, workspaces=2)
    with serving(clockify=fake) as trackers:
        with pytest.raises(ChooseWorkspace) as refused:
            service.connect(db_session, account, box, "clockify", TOKEN, api_url=trackers.url)
        assert [c for c, _ in refused.value.choices] == ["64a687e29ae1f428e7ebe303", "65b9e1f9c1a2b3c4d5e6f708"]
        db_session.rollback()
        with transaction(db_session):
            waiting = service.connect(db_session, account, box, "clockify", TOKEN, api_url=trackers.url,
                                      wait_for_choice=True)
        assert waiting.status == "choose_workspace" and waiting.next_sync_at is None
        with transaction(db_session):
            chosen = service.choose_workspace(db_session, account, waiting.id, "64a687e29ae1f428e7ebe303")
        assert (chosen.status, chosen.workspace) == ("active", "64a687e29ae1f428e7ebe303")
