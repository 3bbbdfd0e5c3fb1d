"""The job runner on both databases: claim once, progress, errors, retry, lost workers and messages,
fairness between accounts, time limits, and a job's work committed with its "done"."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from sqlalchemy import func, select, update

from hourtab.core import accounts, progress
from hourtab.core.db import make_engine, make_sessionmaker, utcnow
from hourtab.core.errors import InvalidInput
from hourtab.core.jobrunner import JobRunner, Slots, checkpoint
from hourtab.core.jobs import (
    MAX_ATTEMPTS,
    Job,
    consumer_seen,
    create_job,
    fair_order,
    queue_health,
    requeue_stale,
    retry_job,
)
from hourtab.core.ratelimit import RateEvent
from tests.helpers.waiting import wait_until


@pytest.fixture
def sessions(database_url):
    engine = make_engine(database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture
def account_id(sessions) -> int:
    with sessions() as s:
        account = accounts.create_account(s, "jobs@example.com", "a long enough password")
        s.commit()
        return account.id


def _job(sessions, account_id, kind="work") -> str:
    with sessions() as s:
        job = create_job(s, account_id, kind, {"n": 3})
        s.commit()
        return job.id


def _get(sessions, job_id) -> Job:
    with sessions() as s:
        return s.get(Job, job_id)


def test_a_job_runs_once_reports_progress_and_keeps_its_result(sessions, account_id):
    seen = []

    def work(session, job):
        for i in range(job.params["n"]):
            progress.report("Counting", i + 1, job.params["n"])
            seen.append(_get(sessions, job.id).done)
        return {"counted": job.params["n"]}

    runner = JobRunner(sessions, {"work": work}, worker="t", progress_every_s=0)
    job_id = _job(sessions, account_id)
    assert runner.run(job_id) == "done"
    assert seen == [1, 2, 3]
    job = _get(sessions, job_id)
    assert (job.status, job.result, job.attempts, job.lease_until) == ("done", {"counted": 3}, 1, None)
    assert runner.run(job_id) == "skipped"          # a duplicate queue message does nothing
    assert _get(sessions, job_id).attempts == 1


def test_errors_are_shown_safely_and_a_failed_job_can_be_retried(sessions, account_id):
    calls = []

    def flaky(session, job):
        calls.append(1)
        if len(calls) == 1:
            raise InvalidInput("the file is not a W&B run")
        if len(calls) == 2:
            raise RuntimeError("/srv/secret/path exploded")
        return {}

    runner = JobRunner(sessions, {"work": flaky}, worker="t")
    job_id = _job(sessions, account_id)
    assert runner.run(job_id) == "failed"
    assert _get(sessions, job_id).error == "the file is not a W&B run"
    with sessions() as s:
        retry_job(s, s.get(Job, job_id))
        s.commit()
    assert runner.run(job_id) == "failed"
    error = _get(sessions, job_id).error
    assert "unexpectedly" in error and "/srv" not in error
    with sessions() as s:
        retry_job(s, s.get(Job, job_id))
        s.commit()
        with pytest.raises(InvalidInput):
            retry_job(s, s.get(Job, job_id))       # only failed jobs
    assert runner.run(job_id) == "done"


def test_a_lost_worker_leaves_the_job_to_another_and_cannot_overwrite_it(sessions, account_id):
    job_id = _job(sessions, account_id)
    first = JobRunner(sessions, {}, worker="dead", lease_s=30)
    assert first._claim(job_id) == 1                # claimed, then the worker dies (no heartbeat)
    with sessions() as s:
        assert requeue_stale(s) == []               # lease still running
        later = utcnow() + dt.timedelta(seconds=31)
        assert requeue_stale(s, later) == [job_id]
        s.commit()
    done = JobRunner(sessions, {"work": lambda s, j: {"by": "second"}}, worker="second")
    assert done.run(job_id) == "done"
    assert first._write(job_id, 1, status="failed") == 0   # the old attempt wakes up: ignored
    job = _get(sessions, job_id)
    assert (job.status, job.attempts, job.worker, job.result) == ("done", 2, "second", {"by": "second"})


def test_waiting_jobs_the_broker_has_no_message_for_are_sent_again(sessions, account_id):
    first, second, third = (_job(sessions, account_id) for _ in range(3))
    sent = []
    runner = JobRunner(sessions, {}, worker="w", enqueue=sent.append)
    assert runner.resend([first, second, third], settle_s=0) == []          # every job has its message
    assert runner.resend([first], settle_s=0) == [second, third] == sent    # two messages were lost
    sent.clear()
    assert runner.resend([], settle_s=60) == [] == sent                     # just queued: left to the request
    # Messages are tickets: two for already finished jobs still run the two waiting ones.
    assert runner.resend(["done-1", "done-2", "done-3"], settle_s=0) == []


def test_the_next_job_is_the_least_recently_served_accounts(sessions, account_id):
    with sessions() as s:
        other = accounts.create_account(s, "other@example.com", "a long enough password").id
        s.commit()
    a1, a2 = _job(sessions, account_id), _job(sessions, account_id)
    b1 = _job(sessions, other)
    with sessions() as s:
        assert fair_order(s)[:1] == [a1]              # nobody served yet: the longest waiting
    order = []
    runner = JobRunner(sessions, {"work": lambda s, j: order.append(j.id) or {}}, worker="w")
    assert [runner.run_next() for _ in range(4)] == ["done", "done", "done", "idle"]
    assert order == [a1, b1, a2]                      # not a1, a2, b1: the other account goes second


def test_a_job_whose_worker_keeps_dying_is_failed(sessions, account_id):
    job_id = _job(sessions, account_id)
    with sessions() as s:
        s.execute(update(Job).where(Job.id == job_id).values(
            status="running", attempts=MAX_ATTEMPTS, lease_until=utcnow() - dt.timedelta(seconds=1)))
        s.commit()
        assert requeue_stale(s) == []
        s.commit()
    job = _get(sessions, job_id)
    assert job.status == "failed" and "stopped 3 times" in job.error


def _events(sessions) -> int:
    with sessions() as s:
        return s.scalar(select(func.count()).select_from(RateEvent))


def _write_event(session, name="job-effect"):
    session.add(RateEvent(bucket=name, key="k", at=utcnow()))
    session.flush()


def test_a_jobs_writes_commit_with_its_done_and_a_failure_keeps_none(sessions, account_id):
    def work(session, job):
        _write_event(session)
        if job.params["n"] == 0:
            raise InvalidInput("refused after writing")
        return {}

    runner = JobRunner(sessions, {"work": work}, worker="w")
    with sessions() as s:
        failing = create_job(s, account_id, "work", {"n": 0}).id
        s.commit()
    assert runner.run(failing) == "failed" and _events(sessions) == 0
    assert runner.run(_job(sessions, account_id)) == "done" and _events(sessions) == 1


def test_an_attempt_that_lost_its_job_keeps_nothing_even_at_a_checkpoint(sessions, account_id):
    job_id = _job(sessions, account_id)
    inside, resume = threading.Event(), threading.Event()

    def slow(session, job):
        inside.set()
        assert resume.wait(30)
        _write_event(session)        # (written after the pause: SQLite has one writer at a time)
        checkpoint(session)          # the lease was lost meanwhile: nothing of this attempt is kept
        return {}

    stale = JobRunner(sessions, {"work": slow}, worker="stale", lease_s=30)
    result = []
    thread = threading.Thread(target=lambda: result.append(stale.run(job_id)))
    thread.start()
    assert inside.wait(30)
    with sessions() as s:           # its worker presumed dead: the lease runs out, another takes over
        s.execute(update(Job).where(Job.id == job_id).values(lease_until=utcnow() - dt.timedelta(seconds=1)))
        assert requeue_stale(s) == [job_id]
        s.commit()
    assert JobRunner(sessions, {"work": lambda s, j: {"by": "second"}}, worker="second").run(job_id) == "done"
    resume.set()
    thread.join(30)
    assert result == ["superseded"] and _events(sessions) == 0
    job = _get(sessions, job_id)
    assert (job.status, job.worker, job.result) == ("done", "second", {"by": "second"})


def test_jobs_created_inside_a_job_are_queued_after_its_commit(sessions, account_id):
    queued = []

    def parent(session, job):
        create_job(session, job.account_id, "child", {})
        assert queued == []                       # not before the job's transaction commits
        return {}

    runner = JobRunner(sessions, {"work": parent}, worker="w", enqueue=queued.append)
    assert runner.run(_job(sessions, account_id)) == "done"
    with sessions() as s:
        assert queued == [s.scalar(select(Job.id).where(Job.kind == "child"))]


def test_a_job_past_its_time_limit_is_failed_and_its_thread_freed(sessions, account_id):
    def forever(session, job):       # never reports progress: only the interrupt stops it
        while True:
            time.sleep(0.02)

    def reporting(session, job):     # reports progress: stopped at its next report
        while True:
            progress.report("Looping", 0, 1)
            time.sleep(0.02)

    runner = JobRunner(sessions, {"forever": forever, "reporting": reporting}, worker="w",
                       time_limits={"forever": 1.0, "reporting": 1.0}, progress_every_s=0)
    for kind in ("forever", "reporting"):
        job_id = _job(sessions, account_id, kind)
        t = time.monotonic()
        assert runner.run(job_id) == "failed"
        assert time.monotonic() - t < 15
        job = _get(sessions, job_id)
        assert job.status == "failed" and "1 s limit" in job.error and job.lease_until is None
    assert runner.run(_job(sessions, account_id, "forever")) == "failed"   # the runner still works


def test_a_heavy_job_waits_for_the_slot_another_holds_then_runs(sessions, account_id):
    heavy = Slots(1)
    inside, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def big(session, job):
        with heavy.held():
            ran.append(job.id)
            inside.set()
            release.wait(30)
        return {}

    runner = JobRunner(sessions, {"big": big}, worker="w")
    first, second = _job(sessions, account_id, "big"), _job(sessions, account_id, "big")
    threads = [threading.Thread(target=runner.run, args=(first,))]
    threads[0].start()
    assert inside.wait(30)
    threads.append(threading.Thread(target=runner.run, args=(second,)))
    threads[1].start()
    wait_until(lambda: heavy.waiting == 1, 30, "the second job at the slot")
    assert ran == [first]               # ... and not past it while the first holds it
    release.set()
    for t in threads:
        t.join(30)
    assert ran == [first, second] and _get(sessions, second).status == "done"


def test_a_job_waiting_for_a_slot_is_still_stopped_at_its_time_limit(sessions, account_id):
    heavy = Slots(1)

    def big(session, job):
        with heavy.held():
            return {}

    runner = JobRunner(sessions, {"big": big}, worker="w", time_limits={"big": 1.0})
    with heavy.held():                  # another job holds the only slot throughout
        job_id = _job(sessions, account_id, "big")
        assert runner.run(job_id) == "failed"
        assert heavy.waiting == 0       # the stopped job left the queue for the slot
    assert "1 s limit" in _get(sessions, job_id).error
    assert runner.run(_job(sessions, account_id, "big")) == "done"     # the slot was never taken by it


def test_queue_health_counts_live_consumers_and_the_longest_wait(sessions, account_id):
    with sessions() as s:
        assert queue_health(s, 60).as_dict() == {"consumers": 0, "waiting": 0, "running": 0,
                                                 "oldest_waiting_s": None, "stalled": False,
                                                 "busy_past_budget": []}
    job_id = _job(sessions, account_id)
    with sessions() as s:
        s.execute(update(Job).where(Job.id == job_id).values(updated_at=utcnow() - dt.timedelta(seconds=90)))
        s.commit()
        health = queue_health(s, 60)
        assert health.stalled and health.waiting == 1 and health.oldest_waiting_s >= 90
        consumer_seen(s, "host:1", 2, now=utcnow() - dt.timedelta(seconds=61))   # seen, but not lately
        s.commit()
        assert queue_health(s, 60).consumers == 0
        consumer_seen(s, "host:1", 2)
        s.commit()
        assert queue_health(s, 60).consumers == 1 and not queue_health(s, 60).stalled


def test_an_account_with_a_job_running_goes_after_one_with_none(sessions, account_id):
    with sessions() as s:
        other = accounts.create_account(s, "second@example.com", "a long enough password").id
        s.commit()
    running, waiting = _job(sessions, account_id), _job(sessions, account_id)
    assert JobRunner(sessions, {}, worker="w")._claim(running) == 1      # a second thread is busy with it
    later = _job(sessions, other)
    with sessions() as s:
        assert fair_order(s) == [later, waiting]


def test_an_archive_of_empty_files_reports_its_progress_throttled(sessions, account_id, tmp_path):
    """Its total is 0 bytes, so no report is the last one: each is throttled like any other (it was one
    database write per member, minutes for ten thousand)."""
    import zipfile

    from incidents.evidence import archives

    archive = tmp_path / "empty.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(2000):
            z.writestr(f"run/files/empty-{i}.txt", b"")

    def unpack(session, job):
        archives.extract(archive, tmp_path / "out")
        return {}

    runner = JobRunner(sessions, {"unpack": unpack}, worker="t", progress_every_s=60)
    writes: list[dict] = []
    original = runner._write
    runner._write = lambda job_id, attempt, **values: writes.append(values) or original(job_id, attempt, **values)
    with sessions() as s:
        job = create_job(s, account_id, "unpack", {})
        s.commit()
    assert runner.run(job.id) == "done"
    assert len([w for w in writes if w.get("phase") == "Unpacking"]) == 1
