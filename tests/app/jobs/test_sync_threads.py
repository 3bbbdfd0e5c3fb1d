"""A worker's threads overlap the trackers' waits, and one connection is still never synced twice at once.

Real parts: the shared Redis (a queue name of the test's own), both databases, the worker's own threads
(``Worker.start``, as many as ``HOURTAB_WORKER_THREADS`` says) and the fake Toggl over HTTP, which holds
every request until the test lets them go: the syncs reading at the same time are counted, not timed.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import select

from hourtab.core.db import transaction
from tests.helpers.fake_trackers import Toggl, serving
from tests.helpers.sync_runs import TOKEN, at, make_retainer, months
from tests.helpers.waiting import wait_until

REDIS_URL = "redis://127.0.0.1:6379/0"
ACCOUNTS = 4


class GatedToggl(Toggl):
    """Every request waits at the gate while it is shut; ``waiting`` is how many wait there now."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.open = threading.Event()
        self.open.set()
        self.waiting = 0
        self.most_waiting = 0
        self._count = threading.Lock()

    def authorised(self, headers) -> bool:
        with self._count:
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
        try:
            assert self.open.wait(60)
        finally:
            with self._count:
                self.waiting -= 1
        return super().authorised(headers)


@pytest.fixture
def redis_queue():
    import redis

    name = f"hourtab-test-{uuid.uuid4().hex[:10]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"*{name}*"))
    if keys:
        client.delete(*keys)
    client.close()


def _connected_accounts(app, url: str) -> list[tuple[int, str]]:
    """``ACCOUNTS`` accounts, each with a retainer and a Toggl connection: (connection id, page token)."""
    from app.extensions import sync_limits, tokens
    from hourtab.core.accounts import create_account
    from hourtab.sync import service

    made = []
    with app.app_context(), app.extensions["hourtab.sessionmaker"]() as s:
        for i in range(ACCOUNTS):
            with transaction(s):
                account = create_account(s, f"threads{i}@example.com", "a long enough password")
            retainer = make_retainer(s, account, "Acme GmbH")
            with transaction(s):
                connection = service.connect(s, account, tokens(), "toggl", TOKEN, api_url=url,
                                             limits=sync_limits(app.config))
            made.append((connection.id, retainer.public_token))
    return made


@pytest.mark.slow
def test_threads_read_trackers_at_once_and_never_sync_one_connection_twice(make_app, redis_queue):
    from app.jobs.sync import queue_sync
    from app.jobs.worker import Worker
    from hourtab.core.jobs import Job, create_job
    from hourtab.sync.models import Connection

    app = make_app(HOURTAB_REDIS_URL=REDIS_URL, HOURTAB_QUEUE_NAME=redis_queue, QUEUE_IMMEDIATE=False,
                   HOURTAB_JOB_LEASE_S="3", HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS="1",
                   HOURTAB_WORKER_THREADS=str(ACCOUNTS + 1))
    fake = GatedToggl(TOKEN)
    day = months()[1]
    fake.add(at(day, 9), 3600, "Design")
    fake.add(at(day, 11), 1800, "Review")
    queue = app.extensions["hourtab.queue"]
    with serving(toggl=fake) as trackers:
        accounts = _connected_accounts(app, trackers.url)
        with app.extensions["hourtab.sessionmaker"]() as s:
            first = [queue_sync(app, s, s.get(Connection, cid), "test").id for cid, _ in accounts]
            twice = s.get(Connection, accounts[0][0])
            with transaction(s):     # a second sync of the first connection, as a duplicate message would be
                duplicate = create_job(s, twice.account_id, "sync_run", {"connection_id": twice.id}).id
            queue.enqueue(duplicate)
        fake.open.clear()
        worker = Worker(app)
        assert worker.threads == ACCOUNTS + 1
        worker.start()
        try:
            # Every connection's sync waits on the tracker at the same time, one per thread...
            wait_until(lambda: fake.waiting == ACCOUNTS, 60, "every connection's sync reading its tracker")
            # ...and the free thread refuses the second sync of a connection already syncing (whichever
            # of its two jobs a thread claimed first reads the tracker).
            refused = wait_until(lambda: next((j for j in (first[0], duplicate) if _job(app, j).status == "done"),
                                              None), 60, "the second sync of the first connection")
            assert _job(app, refused).result["status"] == "busy"
            fake.open.set()
            wait_until(lambda: all(_job(app, j).status == "done" for j in [*first, duplicate]), 60, "every sync")
        finally:
            fake.open.set()
            worker.stop()
    assert fake.most_waiting == ACCOUNTS
    synced = [j for j in [*first, duplicate] if j != refused]
    assert [(_job(app, j).result["status"], _job(app, j).result["new"]) for j in synced] == [("done", 2)] * ACCOUNTS
    client = app.test_client()
    for _, token in accounts:
        assert client.get(f"/h/{token}.json").get_json()["current"]["used_seconds"] == 5400
    with app.extensions["hourtab.sessionmaker"]() as s:
        assert s.scalars(select(Connection.lock_job_id)).all() == [None] * ACCOUNTS
        assert s.scalars(select(Job.attempts).where(Job.kind == "sync_run")).all() == [1] * (ACCOUNTS + 1)


def _job(app, job_id: str):
    from hourtab.core.jobs import Job

    with app.extensions["hourtab.sessionmaker"]() as s:
        return s.get(Job, job_id)


def test_the_thread_count_is_a_setting_that_sizes_the_database_pool(make_app, tmp_path):
    """``HOURTAB_WORKER_THREADS``: read when ``--threads`` is not given; its engine keeps room for a few
    connections a thread, so threads do not wait on the pool; no whole number from 1 to 64 is refused."""
    from app.config import from_environment
    from hourtab.core.errors import InvalidInput

    assert from_environment({"HOURTAB_DATA_DIR": str(tmp_path)})["WORKER_THREADS"] == 8
    for wrong in ("0", "65", "many"):
        with pytest.raises(InvalidInput, match="HOURTAB_WORKER_THREADS"):
            from_environment({"HOURTAB_DATA_DIR": str(tmp_path), "HOURTAB_WORKER_THREADS": wrong})
    pool = make_app(HOURTAB_WORKER_THREADS="20").extensions["hourtab.engine"].pool
    assert (pool.size(), pool._max_overflow) == (22, 40)
