"""A sync attempt that lost its job keeps none of its writes, and one stopped by its time limit leaves the
connection free for the next sync at once: the sync's durable steps are the job runner's fenced commits.

Each test holds the first attempt mid-read on one tracker server (what the tracker said then) and runs
the next sync against a second server (what it says now), so whatever the first attempt would have
written is told apart from what the ledger must show."""

from __future__ import annotations

import datetime as dt
import threading

from sqlalchemy import func, select, text, update

from hourtab.core.db import make_sessionmaker, transaction, utcnow
from hourtab.core.jobrunner import JobRunner
from hourtab.core.jobs import Job, create_job
from hourtab.sync import runner, service
from hourtab.sync.models import Connection
from hourtab.timesheets.models import TimeEntry
from tests.helpers.fake_trackers import Toggl, serving
from tests.helpers.sync_runs import TOKEN, at, ledger_by_period, make_retainer, months
from tests.helpers.waiting import wait_until

ACME = "Acme GmbH"      # the Toggl fake's first client (project 0)


def _trackers() -> tuple[Toggl, Toggl]:
    """The tracker as the first attempt reads it (one short entry), and as it is by the next sync."""
    current = months()[1]
    then, now = Toggl(TOKEN), Toggl(TOKEN)
    then.add(at(current, 2), 600, "Work")
    now.add(at(current, 2), 3600, "Work")        # the same entry (same id), edited since
    now.add(at(current, 4), 1800, "More")
    return then, now


def _handlers(box) -> dict:
    return {"sync_run": lambda s, j: runner.sync_job(s, j, box).as_json()}


def _start_held(db_session, account, box, then: Toggl, url: str, job_runner: JobRunner):
    """Connect to ``url``, queue a sync and run it in a thread until it is reading the held tracker."""
    with transaction(db_session):
        connection = service.connect(db_session, account, box, "toggl", TOKEN, api_url=url)
    with transaction(db_session):
        job_id = create_job(db_session, account.id, "sync_run", {"connection_id": connection.id}).id
    then.hold.set()
    ended: list[str] = []
    thread = threading.Thread(target=lambda: ended.append(job_runner.run(job_id)), daemon=True)
    thread.start()
    assert then.released.wait(30), "the first attempt never reached the tracker"
    return connection.id, job_id, thread, ended


def _open_transactions(session) -> int:
    """Other connections to this PostgreSQL database inside a transaction but doing nothing."""
    session.rollback()
    return session.scalar(text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                               "AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()"))


def test_a_sync_attempt_that_lost_its_job_keeps_none_of_its_writes(db_session, account, box):
    """Its worker froze while the tracker answered (its lease ran out), so the job was handed to another
    worker and synced there; when the first wakes up and merges what it read, nothing of it is kept."""
    then, now = _trackers()
    retainer = make_retainer(db_session, account, ACME)
    sessions = make_sessionmaker(db_session.get_bind())
    with serving(toggl=then) as old, serving(toggl=now) as new:
        connection_id, job_id, thread, ended = _start_held(
            db_session, account, box, then, old.url, JobRunner(sessions, _handlers(box), worker="frozen"))
        db_session.expire_all()
        assert db_session.get(Job, job_id).phase == "Reading Toggl Track"     # committed with the claim
        if db_session.get_bind().dialect.name == "postgresql":
            assert _open_transactions(db_session) == 0      # the claim is committed; no transaction while reading
        with transaction(db_session):
            db_session.get(Connection, connection_id).api_url = new.url
        second = "skipped"
        for _ in range(20):   # its heartbeat may renew the lease between our expiring it and the claim
            with transaction(db_session):
                db_session.execute(update(Job).where(Job.id == job_id)
                                   .values(lease_until=utcnow() - dt.timedelta(seconds=1)))
            second = JobRunner(sessions, _handlers(box), worker="next").run(job_id)
            if second != "skipped":
                break
        assert second == "done"
        then.hold.clear()
        thread.join(30)
    assert ended == ["superseded"]
    db_session.expire_all()
    job = db_session.get(Job, job_id)
    assert (job.status, job.attempts, job.worker) == ("done", 2, "next")
    assert (job.result["new"], job.result["changed"]) == (2, 0)
    assert ledger_by_period(db_session, retainer) == {months()[1]: 3600 + 1800}
    stored = db_session.get(Connection, connection_id)
    assert (stored.last_result["new"], stored.lock_job_id, stored.failures) == (2, None, 0)


def test_a_sync_stopped_by_its_time_limit_leaves_the_connection_syncable(db_session, account, box):
    """The tracker never answers within the limit: the job fails with the reason, the next sync of the
    connection runs at once (not "busy") although the stopped one is still stuck in its read, and what
    the stopped one does when the answer finally comes is not kept."""
    then, now = _trackers()
    retainer = make_retainer(db_session, account, ACME)
    sessions = make_sessionmaker(db_session.get_bind())
    limited = JobRunner(sessions, _handlers(box), worker="slow", time_limits={"sync_run": 3.0})
    with serving(toggl=then) as old, serving(toggl=now) as new:
        connection_id, job_id, thread, ended = _start_held(db_session, account, box, then, old.url, limited)

        def failed():
            db_session.expire_all()
            return db_session.get(Job, job_id).status == "failed"

        wait_until(failed, 30, "the time limit to fail the job")
        assert "ran past the 3 s limit" in db_session.get(Job, job_id).error
        stored = db_session.get(Connection, connection_id)
        assert stored.last_sync_at is None and service.pending_job(db_session, stored) is None   # Sync now queues
        with transaction(db_session):
            stored.api_url = new.url
            job = create_job(db_session, account.id, "sync_run", {"connection_id": connection_id})
        assert JobRunner(sessions, _handlers(box), worker="next").run(job.id) == "done"
        db_session.expire_all()
        assert db_session.get(Job, job.id).result["status"] == "done"
        then.hold.clear()
        thread.join(30)
    assert ended == ["failed"] and not thread.is_alive()
    db_session.expire_all()
    assert ledger_by_period(db_session, retainer) == {months()[1]: 3600 + 1800}
    stored = db_session.get(Connection, connection_id)
    assert (stored.last_result["new"], stored.lock_job_id) == (2, None)
    assert db_session.scalar(select(func.count()).select_from(Job).where(Job.status == "running")) == 0


def test_a_connection_removed_while_the_tracker_answers_gets_nothing_written(db_session, account, box):
    """The consultant removes the connection mid-read: the sync ends as "gone" (not an error) and adds
    no entries for a connection that no longer exists."""
    then, _ = _trackers()
    sessions = make_sessionmaker(db_session.get_bind())
    with serving(toggl=then) as old:
        connection_id, job_id, thread, ended = _start_held(
            db_session, account, box, then, old.url, JobRunner(sessions, _handlers(box), worker="w"))
        with transaction(db_session):
            service.remove(db_session, account, connection_id)
        then.hold.clear()
        thread.join(30)
    assert ended == ["done"]
    db_session.expire_all()
    assert db_session.get(Job, job_id).result["status"] == "gone"
    assert db_session.scalar(select(func.count()).select_from(TimeEntry)) == 0
