"""The job runner on both databases: claim once, progress, errors, retry, and lost workers."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import update

from hourtab.core import accounts, progress
from hourtab.core.db import make_engine, make_sessionmaker, utcnow
from hourtab.core.errors import InvalidInput
from hourtab.core.jobs import MAX_ATTEMPTS, Job, JobRunner, create_job, requeue_stale, retry_job


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


def test_a_queued_job_whose_message_was_lost_is_queued_again(sessions, account_id):
    job_id = _job(sessions, account_id)
    with sessions() as s:
        assert requeue_stale(s, lost_after_s=600) == []
        assert requeue_stale(s, utcnow() + dt.timedelta(seconds=601), lost_after_s=600) == [job_id]
        s.commit()
        assert requeue_stale(s, utcnow() + dt.timedelta(seconds=601), lost_after_s=600) == []   # just touched


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
