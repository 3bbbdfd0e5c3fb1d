"""Long work done off the request: the ``jobs`` table, and creating, claiming and finishing jobs.

The task queue carries only the job id; everything a page shows (phase, bytes done, error) and
everything a retry needs (parameters, attempt count, lease) lives in the job row, in the shared
database, so any app host can show any worker's progress.

Queue engines without acknowledgements (Huey among them) lose a task whose worker dies mid-run.
The job row closes that gap: a running job holds a lease its worker keeps renewing; once the lease
has run out, :func:`requeue_stale` hands the job back so another worker picks it up. Claiming is
one conditional UPDATE, so two workers never run the same attempt, and every later write is
guarded by the attempt number, so a presumed-dead worker that wakes up cannot overwrite anything.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, String, Text, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from hourtab.core import progress
from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.errors import HourTabError, InvalidInput, NotFound
from hourtab.core.scoping import AccountOwned, get_owned

log = logging.getLogger(__name__)

STATUSES = ("queued", "running", "done", "failed")


class Job(AccountOwned, Base):
    __tablename__ = "jobs"

    #: Random hex: job URLs are also scoped to the account, this just keeps them unguessable.
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="queued", index=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    result: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    phase: Mapped[str] = mapped_column(String(100), nullable=False, default="")
    done: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    total: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    #: A message safe to show the consultant (never a traceback or a server path).
    error: Mapped[str] = mapped_column(Text, nullable=False, default="")
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    #: While running, the worker renews this; past it, the job is presumed dead and is queued again.
    lease_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    worker: Mapped[str] = mapped_column(String(100), nullable=False, default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)

    @property
    def percent(self) -> float | None:
        if self.status == "done":
            return 100.0
        return round(100.0 * self.done / self.total, 1) if self.total > 0 else None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "status": self.status, "phase": self.phase,
                "done": self.done, "total": self.total, "percent": self.percent, "error": self.error,
                "attempts": self.attempts}


#: A job whose worker died this many times is failed instead of queued again.
MAX_ATTEMPTS = 3
Handler = Callable[[Session, Job], dict[str, Any]]


def create_job(session: Session, account_id: int, kind: str, params: dict[str, Any]) -> Job:
    job = Job(id=secrets.token_hex(16), account_id=account_id, kind=kind, params=params, status="queued")
    session.add(job)
    session.flush()
    return job


def get_job(session: Session, account_id: int, job_id: str) -> Job:
    return get_owned(session, Job, account_id, job_id, missing=NotFound("job not found"))


def open_jobs(session: Session, account_id: int, kind: str, limit: int = 10) -> list[Job]:
    """The account's unfinished and failed jobs of one kind, newest first (for the list pages)."""
    return list(session.scalars(select(Job).where(Job.account_id == account_id, Job.kind == kind,
                                                  Job.status != "done")
                                .order_by(Job.created_at.desc()).limit(limit)))


def retry_job(session: Session, job: Job) -> Job:
    """Queue a failed job again (its parameters are kept; a done or running job is refused)."""
    if job.status != "failed":
        raise InvalidInput(f"only a failed job can be retried; this one is {job.status}")
    job.status, job.error, job.phase, job.done, job.total = "queued", "", "", 0, 0
    # Attempt numbers keep growing (a stale worker's writes stay fenced off); the give-up count
    # starts again from here.
    job.params = {**job.params, "_retry_base": job.attempts}
    job.lease_until, job.updated_at = None, utcnow()
    session.flush()
    return job


def requeue_stale(session: Session, now: dt.datetime | None = None, lost_after_s: float = 600.0) -> list[str]:
    """Jobs to hand to the queue again: those whose worker stopped renewing the lease (failed after
    MAX_ATTEMPTS), and queued ones untouched for ``lost_after_s`` (their message may never have
    reached the queue). A duplicate message is harmless: only one claim of an attempt succeeds.
    """
    now = now or utcnow()
    waiting = session.scalars(select(Job.id).where(
        Job.status == "queued", Job.updated_at < now - dt.timedelta(seconds=lost_after_s))).all()
    if waiting:
        session.execute(update(Job).where(Job.id.in_(waiting), Job.status == "queued").values(updated_at=now))
    stale = session.execute(select(Job.id, Job.attempts, Job.params).where(Job.status == "running",
                                                                           Job.lease_until < now)).all()
    requeued = []
    for job_id, attempts, params in stale:
        tries = attempts - int((params or {}).get("_retry_base", 0))
        give_up = tries >= MAX_ATTEMPTS
        values = ({"status": "failed", "error": f"The worker stopped {tries} times while running this job."}
                  if give_up else {"status": "queued", "phase": "Waiting for a worker (the last one stopped)"})
        hit = session.execute(update(Job).where(Job.id == job_id, Job.status == "running",
                                                Job.attempts == attempts, Job.lease_until < now)
                              .values(lease_until=None, updated_at=now, **values)).rowcount
        if hit and not give_up:
            requeued.append(job_id)
    return list(waiting) + requeued


class JobRunner:
    """Runs one job: claim, heartbeat, progress, result or error. Commits its own small transactions."""

    def __init__(self, sessions: sessionmaker[Session], handlers: Mapping[str, Handler], *, worker: str,
                 lease_s: float = 60.0, safe_errors: tuple[type[BaseException], ...] = (HourTabError,),
                 progress_every_s: float = 0.25) -> None:
        self.sessions, self.handlers, self.worker = sessions, handlers, worker
        self.lease_s, self.safe_errors, self.progress_every_s = lease_s, safe_errors, progress_every_s

    def run(self, job_id: str) -> str:
        """Run the job if it can be claimed; returns its final status (or 'skipped')."""
        attempt = self._claim(job_id)
        if attempt is None:
            return "skipped"
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job_id, attempt, stop), daemon=True)
        beat.start()
        try:
            with self.sessions() as session, progress.reporting(self._reporter(job_id, attempt)):
                job = session.get(Job, job_id)
                try:
                    result = self.handlers[job.kind](session, job)
                except self.safe_errors as e:
                    session.rollback()
                    return self._finish(job_id, attempt, status="failed", error=str(e))
                except Exception:
                    session.rollback()
                    log.exception("job %s (%s) failed", job_id, job.kind)
                    return self._finish(job_id, attempt, status="failed",
                                        error=f"The job failed unexpectedly (reference {job_id[:8]}); "
                                              "retry it, and if it fails again report the reference.")
                return self._finish(job_id, attempt, status="done", result=result)
        finally:
            stop.set()
            beat.join(timeout=5)

    def _claim(self, job_id: str) -> int | None:
        now = utcnow()
        with self.sessions() as s:
            job = s.get(Job, job_id)
            if job is None:
                return None
            attempt = job.attempts + 1
            claimable = (Job.status == "queued") | ((Job.status == "running") & (Job.lease_until < now))
            hit = s.execute(update(Job).where(Job.id == job_id, Job.attempts == job.attempts, claimable).values(
                status="running", attempts=attempt, worker=self.worker[:100], started_at=now, updated_at=now,
                lease_until=now + dt.timedelta(seconds=self.lease_s), phase="Starting", error="")).rowcount
            s.commit()
            return attempt if hit else None

    def _write(self, job_id: str, attempt: int, **values: Any) -> int:
        with self.sessions() as s:
            hit = s.execute(update(Job).where(Job.id == job_id, Job.attempts == attempt, Job.status == "running")
                            .values(updated_at=utcnow(), **values)).rowcount
            s.commit()
            return hit

    def _finish(self, job_id: str, attempt: int, *, status: str, error: str = "",
                result: dict[str, Any] | None = None) -> str:
        self._write(job_id, attempt, status=status, error=error[:2000], result=result or {},
                    finished_at=utcnow(), lease_until=None)
        return status

    def _heartbeat(self, job_id: str, attempt: int, stop: threading.Event) -> None:
        while not stop.wait(self.lease_s / 3):
            try:
                self._write(job_id, attempt, lease_until=utcnow() + dt.timedelta(seconds=self.lease_s))
            except Exception:  # a missed beat is retried on the next tick; the lease has slack
                log.warning("could not renew the lease of job %s", job_id, exc_info=True)

    def _reporter(self, job_id: str, attempt: int) -> progress.Reporter:
        last = {"at": 0.0, "phase": ""}

        def report(phase: str, done: int, total: int) -> None:
            now = time.monotonic()
            if phase == last["phase"] and now - last["at"] < self.progress_every_s and done < total:
                return
            last.update(at=now, phase=phase)
            try:
                self._write(job_id, attempt, phase=phase[:100], done=done, total=total)
            except Exception:   # progress is for the page; losing one report must not fail the job
                log.warning("could not record the progress of job %s", job_id, exc_info=True)

        return report
