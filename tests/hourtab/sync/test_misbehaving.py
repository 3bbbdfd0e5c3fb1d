"""Trackers that misbehave cost one sync its budget and no more, and save nothing half-done: a slow drip,
endless pages, a huge answer, a 429 storm, redirects to private addresses, entries no reader can read,
and a connection removed while its tracker answers. On both databases, with ~1 s limits."""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import replace

import pytest
from sqlalchemy import func, select

from hourtab.core.db import make_sessionmaker, transaction
from hourtab.core.jobrunner import JobRunner
from hourtab.core.jobs import Job, create_job
from hourtab.sync import runner, service
from hourtab.sync.errors import OutOfBudget
from hourtab.sync.limits import MIB, Limits
from hourtab.sync.models import Connection, SyncedEntry
from hourtab.timesheets.models import TimeEntry
from tests.helpers.fake_trackers import Clockify, Harvest, Kimai, Toggl, serving
from tests.helpers.sync_runs import TOKEN, at, months, run_sync
from tests.helpers.waiting import wait_until

#: What these tests allow a request and a sync: small, so a misbehaving tracker is cut off quickly.
LIMITS = Limits(allow_private=True, request_s=0.5, sync_s=1.5, sync_requests=15, answer_bytes=MIB,
                sync_bytes=4 * MIB, check_s=1.0)
#: Whatever a tracker does, a sync under LIMITS is over well within this (it took minutes before).
WELL_WITHIN_S = 10
#: What a healthy tracker's sync gets in these tests: room to finish on a loaded machine.
HEALTHY = replace(LIMITS, request_s=10, sync_s=60, sync_requests=400)


def _connect(session, account, box, name, fake, url) -> Connection:
    extra = {"harvest_account": fake.account} if name == "harvest" else {}
    with transaction(session):
        return service.connect(session, account, box, name, TOKEN, api_url=url, **extra)


def _entries(session) -> int:
    session.expire_all()
    return session.scalar(select(func.count()).select_from(TimeEntry).where(TimeEntry.status == "active"))


def _timed_sync(session, connection_id, box) -> tuple[dict, float]:
    started = time.monotonic()
    outcome = run_sync(session, connection_id, box, limits=LIMITS)
    return outcome, time.monotonic() - started


def _unchanged_and_due(session, connection_id, cursor) -> None:
    """Nothing was saved: the cursor is where it was, and the connection comes back at its next turn."""
    session.expire_all()
    stored = session.get(Connection, connection_id)
    assert stored.cursor == cursor and stored.status == "active" and stored.lock_job_id is None
    assert stored.next_sync_at is not None


def test_a_slow_drip_is_cut_off_at_the_request_deadline(db_session, account, box):
    fake = Kimai(TOKEN)
    fake.add(at(months()[1], 9), 3600)
    with serving(kimai=fake) as trackers:
        connection = _connect(db_session, account, box, "kimai", fake, trackers.url)
        fake.drip_s = 0.05                     # its ~1.5 kB answer would take over a minute
        outcome, took = _timed_sync(db_session, connection.id, box)
    assert outcome["status"] == "failed" and "did not answer GET /api/timesheets within 0.5 s" in outcome["error"]
    assert took < WELL_WITHIN_S
    assert _entries(db_session) == 0
    _unchanged_and_due(db_session, connection.id, {})


@pytest.mark.parametrize("name", ["harvest", "kimai"])
def test_endless_pages_end_at_the_budget_and_save_nothing(db_session, account, box, name):
    fake = Harvest(TOKEN, max_per_page=1, endless=True) if name == "harvest" else Kimai(TOKEN, endless=True)
    day = months()[1]
    fake.add(day, 1.5) if name == "harvest" else fake.add(at(day, 9), 3600)
    with serving(**{name: fake}) as trackers:
        connection = _connect(db_session, account, box, name, fake, trackers.url)
        outcome, took = _timed_sync(db_session, connection.id, box)
    assert outcome["status"] == "out_of_budget" and "nothing was saved" in outcome["error"]
    assert "15 requests" in outcome["error"] and took < WELL_WITHIN_S
    assert len(fake.requests) <= LIMITS.sync_requests + 1           # the token check, then the budget
    assert _entries(db_session) == 0
    _unchanged_and_due(db_session, connection.id, {})


def test_a_huge_answer_is_not_read_past_its_cap(db_session, account, box):
    fake = Clockify(TOKEN)
    with serving(clockify=fake) as trackers:
        connection = _connect(db_session, account, box, "clockify", fake, trackers.url)
        fake.huge_bytes = 800 * MIB
        outcome, took = _timed_sync(db_session, connection.id, box)
    assert outcome["status"] == "failed" and "with more than 1 MiB; the answer was not read" in outcome["error"]
    assert took < WELL_WITHIN_S
    assert fake.huge_sent < 16 * MIB                 # the connection was dropped at the cap, not drained
    _unchanged_and_due(db_session, connection.id, {})


def test_a_429_storm_reschedules_instead_of_sleeping(db_session, account, box):
    fake = Toggl(TOKEN)
    with serving(toggl=fake) as trackers:
        connection = _connect(db_session, account, box, "toggl", fake, trackers.url)
        asked = len(fake.requests)
        fake.fail(429, {"Retry-After": "59"}, path="/api/v9/", times=1000)
        before = dt.datetime.now(dt.UTC)
        outcome, took = _timed_sync(db_session, connection.id, box)
    assert outcome["status"] == "rate_limited" and "wait 59 s" in outcome["error"]
    assert took < WELL_WITHIN_S and len(fake.requests) - asked == 1     # one request, no sleeping, no retrying
    stored = db_session.get(Connection, connection.id)
    assert dt.timedelta(seconds=58) <= stored.next_sync_at - before <= dt.timedelta(seconds=61)
    _unchanged_and_due(db_session, connection.id, {})


def test_a_redirect_to_a_private_address_is_refused_with_nothing_said(db_session, account, box):
    fake = Kimai(TOKEN)
    with serving(kimai=fake) as trackers:
        connection = _connect(db_session, account, box, "kimai", fake, trackers.url)
        fake.fail(302, {"Location": "http://169.254.169.254/latest/meta-data/"}, path="/api/timesheets")
        outcome, _ = _timed_sync(db_session, connection.id, box)
        assert outcome["status"] == "failed" and outcome["error"] == "The tracker's address is not allowed."
        fake.fail(307, {"Location": "/api/timesheets"}, path="/api/timesheets")   # its own origin: followed
        assert run_sync(db_session, connection.id, box, limits=HEALTHY)["status"] == "done"


def test_entries_no_reader_can_read_are_skipped_and_listed_and_the_rest_sync(db_session, account, box):
    fake = Toggl(TOKEN)
    day = months()[1]
    good = [fake.add(at(day, 2 + i), 1800, f"Entry {i}") for i in range(3)]
    template = fake.entries[good[0]]
    deep = "[" * 100_000 + "]" * 100_000
    fake.raw_rows = [
        f'{{"id": 9001, "workspace_id": {fake.workspace}, "start": "garbage", "duration": 60, "description": "x"}}',
        f'{{"id": [1, 2], "workspace_id": {fake.workspace}, "start": "{template["start"]}", "duration": 60}}',
        f'{{"id": 9003, "workspace_id": {fake.workspace}, "start": "{template["start"]}", "duration": 60, '
        f'"tags": {deep}}}',
    ]
    with serving(toggl=fake) as trackers:
        connection = _connect(db_session, account, box, "toggl", fake, trackers.url)
        outcome = run_sync(db_session, connection.id, box, limits=HEALTHY)
        assert outcome["status"] == "done" and outcome["new"] == 3
        reasons = {u["id"]: u["reason"] for u in outcome["unreadable"]}
        assert len(outcome["unreadable"]) == 3       # each once, though every month's page listed them
        assert reasons == {"9001": "'garbage' is not a time", "(no id)": "it has no usable id",
                           "9003": "it is nested too deep to read"}
        assert _entries(db_session) == 3
        # A known entry that turns unreadable is kept as it was, not taken for deleted.
        fake.raw_rows = []
        fake.entries[good[0]]["start"] = "garbage"
        again = run_sync(db_session, connection.id, box, limits=HEALTHY)
    assert again["removed"] == 0 and [u["id"] for u in again["unreadable"]] == [str(good[0])]
    assert _entries(db_session) == 3
    assert db_session.get(Connection, connection.id).last_result["unreadable"] == again["unreadable"]


def test_removing_a_connection_stops_its_running_sync(db_session, account, box):
    """The tracker pages without end at a steady pace; the consultant removes the connection: the sync
    stops at its next request instead of running to its budget, and writes nothing."""
    fake = Harvest(TOKEN, max_per_page=1, endless=True)
    fake.add(months()[1], 1.0)
    patient = Limits(allow_private=True, request_s=5, sync_s=60, sync_requests=100_000)
    sessions = make_sessionmaker(db_session.get_bind())
    with serving(harvest=fake) as trackers:
        connection = _connect(db_session, account, box, "harvest", fake, trackers.url)
        with transaction(db_session):
            job_id = create_job(db_session, account.id, "sync_run", {"connection_id": connection.id}).id
        handler = {"sync_run": lambda s, j: runner.sync_job(s, j, box, runner.Options(limits=patient)).as_json()}
        thread = threading.Thread(target=JobRunner(sessions, handler, worker="w").run, args=(job_id,), daemon=True)
        thread.start()
        wait_until(lambda: len(fake.requests) > 5, 30, "the sync to be paging")
        with transaction(db_session):
            service.remove(db_session, account, connection.id)
        removed_at = time.monotonic()
        thread.join(30)
        assert not thread.is_alive() and time.monotonic() - removed_at < WELL_WITHIN_S
    db_session.expire_all()
    assert db_session.get(Job, job_id).result["status"] == "gone"
    assert _entries(db_session) == 0
    assert db_session.scalar(select(func.count()).select_from(SyncedEntry)) == 0


def test_the_token_check_runs_under_its_own_few_seconds(db_session, account, box):
    fake = Clockify(TOKEN)
    fake.drip_s = 0.05
    with serving(clockify=fake) as trackers:
        started = time.monotonic()
        with pytest.raises(OutOfBudget, match="did not answer the token check within 1 s; nothing was stored"):
            service.connect(db_session, account, box, "clockify", TOKEN, api_url=trackers.url,
                            limits=replace(LIMITS, request_s=15))
        assert time.monotonic() - started < WELL_WITHIN_S
    db_session.rollback()
    assert db_session.scalar(select(func.count()).select_from(Connection)) == 0
