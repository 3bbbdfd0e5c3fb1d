"""The job rows are the truth, the broker only delivers: lost messages are sent again at once.

Real parts: a Redis server of the test's own (no persistence, restarted mid-test; never the shared
one), the SQLite queue file, both databases, and the worker's own threads (``Worker.start``).
Each job records its effect in a row of its own, so "exactly once" is counted, not assumed.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.slow
LEASE_S = 3.0


class RedisServer:
    """``redis-server`` on a free port, without persistence: a restart loses every message."""

    def __init__(self, folder: Path) -> None:
        self.port, self.folder, self.process = free_port(), folder, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)

        def up() -> bool:
            try:
                return client.ping()
            except redis.RedisError:
                return False

        wait_until(up, 30, "redis-server to answer")
        client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


def _counting_jobs(app, n: int, gate: threading.Event | None = None) -> list[str]:
    """``n`` jobs whose one effect is a row keyed by the job id (a second run would add another)."""
    from app.jobs.broker import start
    from hourtab.core import accounts
    from hourtab.core.db import utcnow
    from hourtab.core.ratelimit import RateEvent

    def count(session, job):
        session.add(RateEvent(bucket="job-effect", key=job.id, at=utcnow()))
        return {}

    def block(session, job):
        assert gate.wait(60)
        return {}

    queue = app.extensions["hourtab.queue"]
    queue.register("count", count, "Counting", 60)
    queue.register("block", block, "Blocking", 120)
    with app.extensions["hourtab.sessionmaker"]() as s:
        account = accounts.create_account(s, "queue@example.com", "a long enough password")
        s.commit()
        return [start(s, account.id, "count", {}).id for _ in range(n)]


def _done(app, ids: list[str]) -> bool:
    from hourtab.core.jobs import Job

    with app.extensions["hourtab.sessionmaker"]() as s:
        return s.scalar(select(func.count()).where(Job.id.in_(ids), Job.status == "done")) == len(ids)


def _assert_each_ran_once(app, ids: list[str]) -> None:
    from hourtab.core.jobs import Job
    from hourtab.core.ratelimit import RateEvent

    with app.extensions["hourtab.sessionmaker"]() as s:
        assert sorted(s.scalars(select(Job.attempts).where(Job.id.in_(ids)))) == [1] * len(ids)
        effects = s.scalars(select(RateEvent.key).where(RateEvent.bucket == "job-effect")).all()
    assert sorted(effects) == sorted(ids)


def test_jobs_queued_before_a_redis_restart_all_run_once_within_a_lease(make_app, redis_server, caplog):
    from app.jobs.broker import start
    from app.jobs.worker import Worker

    app = make_app(HOURTAB_JOB_LEASE_S=str(LEASE_S), QUEUE_IMMEDIATE=False, HOURTAB_REDIS_URL=redis_server.url)
    queue = app.extensions["hourtab.queue"]
    gate = threading.Event()
    ids = _counting_jobs(app, 5, gate)
    worker = Worker(app, threads=1)
    worker.start()
    try:
        with app.extensions["hourtab.sessionmaker"]() as s:     # the only thread is busy...
            blocker = start(s, _account(s), "block", {}).id
        queue.enqueue(blocker)
        for job_id in ids:                                      # ...while five jobs are queued
            queue.enqueue(job_id)
        wait_until(lambda: queue.huey.pending_count() >= 5, 30, "the five messages in Redis")
        caplog.set_level(logging.WARNING, logger="app.jobs.worker")
        redis_server.stop()                                     # a restart without persistence
        gate.set()                                              # the thread is free, the broker gone
        wait_until(lambda: len(_unreachable(caplog)) >= 2, 60, "two attempts to reach the broker")
        redis_server.start()
        back = time.monotonic()
        assert queue.huey.pending_count() == 0                  # every message is lost
        wait_until(lambda: _done(app, ids), 60, "the five jobs")
        took = time.monotonic() - back
    finally:
        worker.stop()
    print(f"all 5 done {took:.2f} s after Redis came back (lease {LEASE_S:g} s)")
    assert took < 2 * LEASE_S, f"the jobs ran {took:.1f} s after Redis came back (lease {LEASE_S:g} s)"
    _assert_each_ran_once(app, ids)
    lines = _unreachable(caplog)
    assert all(r.exc_info is None for r in lines)                # one line per attempt, no traceback
    assert "Traceback" not in caplog.text
    delays = [float(r.getMessage().rsplit("next in ", 1)[1].split()[0]) for r in lines]
    assert delays == sorted(delays) and delays[-1] > delays[0]  # backing off


def _account(session) -> int:
    from hourtab.core.accounts import Account

    return session.scalar(select(Account.id))


def _unreachable(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "queue broker unreachable" in r.getMessage()]


def test_jobs_whose_sqlite_queue_messages_were_deleted_run_once_when_a_worker_starts(make_app, tmp_path):
    from app.jobs.worker import Worker

    app = make_app(HOURTAB_JOB_LEASE_S=str(LEASE_S), QUEUE_IMMEDIATE=False)
    queue = app.extensions["hourtab.queue"]
    ids = _counting_jobs(app, 5)
    for job_id in ids:
        queue.enqueue(job_id)
    assert queue.huey.pending_count() == 5
    with sqlite3.connect(tmp_path / "data" / "queue.db") as db:
        db.execute("DELETE FROM task")
    assert queue.huey.pending_count() == 0
    worker = Worker(app, threads=2)
    started = time.monotonic()
    worker.start()
    try:
        wait_until(lambda: _done(app, ids), 60, "the five jobs")
        took = time.monotonic() - started
    finally:
        worker.stop()
    print(f"all 5 done {took:.2f} s after the worker started (lease {LEASE_S:g} s)")
    assert took < 2 * LEASE_S, f"the jobs ran {took:.1f} s after the worker started (lease {LEASE_S:g} s)"
    _assert_each_ran_once(app, ids)
