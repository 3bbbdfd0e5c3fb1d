"""Long work done off the request: the ``jobs`` table, and creating, choosing and reaping jobs.

The task queue carries only a job id, and only as a ticket to run one job; everything a page shows
(phase, bytes done, error) and everything a retry needs (parameters, attempt count, lease) lives in
the job row, in the shared database, so any app host can show any worker's progress.

The row is the truth and the broker only a delivery channel. Queue engines without
acknowledgements (Huey among them) lose a message whose worker dies mid-run, and a broker without
persistence loses them all on a restart. The rows close both gaps: a running job holds a lease
its worker keeps renewing, and :func:`requeue_stale` hands it back once the lease has run out;
a worker that finds fewer messages in the broker than waiting rows sends the difference
(``JobRunner.resend`` in :mod:`hourtab.core.jobrunner`). Claiming is one conditional UPDATE, so
two workers never run the same attempt, and a job's work commits together with its "done", so a
duplicate message runs nothing twice.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, String, Text, delete, func, select, update
from sqlalchemy.orm import Mapped, Session, aliased, mapped_column

from hourtab.core.db import Base, UTCDateTime, changed_rows, utcnow
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.scoping import AccountOwned, get_owned

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
    #: While queued: when it started waiting (created, retried or handed back).
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


class Consumer(Base):
    """A worker process that consumes the queue, as it last said it was alive (for ``/healthz``)."""

    __tablename__ = "job_consumers"

    #: ``host:pid``, the name jobs record as their ``worker``.
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    threads: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    seen_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow, index=True)


#: A job whose worker died this many times is failed instead of queued again.
MAX_ATTEMPTS = 3
#: What each kind of job does: ``handler(session, job) -> result``, run by the job runner.
Handler = Callable[[Session, Job], dict[str, Any]]


#: ``session.info`` key: ids of jobs created in the session's transaction, for the job runner to
#: queue once that transaction has committed (a job created inside a job).
CREATED = "hourtab.jobs.created"


def create_job(session: Session, account_id: int, kind: str, params: dict[str, Any]) -> Job:
    job = Job(id=secrets.token_hex(16), account_id=account_id, kind=kind, params=params, status="queued")
    session.add(job)
    session.flush()
    session.info.setdefault(CREATED, []).append(job.id)
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




def requeue_stale(session: Session, now: dt.datetime | None = None) -> list[str]:
    """Hand back the running jobs whose worker stopped renewing the lease (failed after MAX_ATTEMPTS);
    returns the ids now queued again. A duplicate message is harmless: only one claim succeeds."""
    now = now or utcnow()
    stale = session.execute(select(Job.id, Job.attempts, Job.params).where(Job.status == "running",
                                                                           Job.lease_until < now)).all()
    requeued = []
    for job_id, attempts, params in stale:
        tries = attempts - int((params or {}).get("_retry_base", 0))
        give_up = tries >= MAX_ATTEMPTS
        values = ({"status": "failed", "error": f"The worker stopped {tries} times while running this job."}
                  if give_up else {"status": "queued", "phase": "Waiting for a worker (the last one stopped)"})
        hit = changed_rows(session, update(Job).where(Job.id == job_id, Job.status == "running",
                                                      Job.attempts == attempts, Job.lease_until < now)
                           .values(lease_until=None, updated_at=now, **values))
        if hit and not give_up:
            requeued.append(job_id)
    return requeued


def waiting_ids(session: Session, settled_before: dt.datetime | None = None, limit: int = 10_000) -> list[str]:
    """Queued jobs, longest waiting first; ``settled_before`` leaves out those queued since."""
    query = select(Job.id).where(Job.status == "queued")
    if settled_before is not None:
        query = query.where(Job.updated_at < settled_before)
    return list(session.scalars(query.order_by(Job.updated_at, Job.id).limit(limit)))


def fair_order(session: Session, limit: int = 8) -> list[str]:
    """Queued jobs in the order a free worker should take them, so one account can't take every worker.

    Accounts with fewer jobs running go first, then the account served least recently (its latest
    job start), then the longest waiting job: with one worker thread, two long uploads of one
    account and a small one of another run as long, small, long.
    """
    running = aliased(Job)
    started = aliased(Job)
    busy = (select(func.count()).select_from(running)
            .where(running.account_id == Job.account_id, running.status == "running").scalar_subquery())
    served = (select(func.max(started.started_at)).where(started.account_id == Job.account_id)
              .scalar_subquery())
    return list(session.scalars(select(Job.id).where(Job.status == "queued")
                                .order_by(busy, served.is_(None).desc(), served, Job.updated_at, Job.id)
                                .limit(limit)))


@dataclass(frozen=True)
class QueueHealth:
    consumers: int                     # consumers seen within the last lease
    waiting: int
    running: int
    oldest_waiting_s: float | None     # how long the longest waiting job has waited
    #: Running jobs past their kind's budget: (kind, seconds running), longest first.
    over_budget: tuple[tuple[str, float], ...] = ()

    @property
    def stalled(self) -> bool:
        """Jobs wait and no consumer is there to take them."""
        return self.waiting > 0 and self.consumers == 0

    @property
    def degraded(self) -> bool:
        """Stalled, or a consumer thread busy with one job past that job's budget."""
        return self.stalled or bool(self.over_budget)

    def as_dict(self) -> dict[str, Any]:
        return {"consumers": self.consumers, "waiting": self.waiting, "running": self.running,
                "oldest_waiting_s": self.oldest_waiting_s, "stalled": self.stalled,
                "busy_past_budget": [{"kind": k, "running_s": s} for k, s in self.over_budget]}


def queue_health(session: Session, lease_s: float, now: dt.datetime | None = None,
                 budgets: Mapping[str, float] | None = None) -> QueueHealth:
    """The queue as ``/healthz`` and ``hourtab worker --check`` report it; ``budgets``: seconds a job of
    each kind may run before its consumer counts as busy past its budget."""
    now = now or utcnow()
    consumers = session.scalar(select(func.count()).select_from(Consumer).where(
        Consumer.seen_at >= now - dt.timedelta(seconds=lease_s))) or 0
    counts = dict(session.execute(select(Job.status, func.count()).where(Job.status.in_(("queued", "running")))
                                  .group_by(Job.status)).all())
    oldest = session.scalar(select(func.min(Job.updated_at)).where(Job.status == "queued"))
    age = None if oldest is None else round(max(0.0, (now - oldest).total_seconds()), 1)
    over: list[tuple[str, float]] = []
    for kind, started in session.execute(select(Job.kind, Job.started_at).where(Job.status == "running")):
        running_s = (now - started).total_seconds() if started is not None else 0.0
        if budgets and kind in budgets and running_s > budgets[kind]:
            over.append((kind, round(running_s, 1)))
    return QueueHealth(consumers, counts.get("queued", 0), counts.get("running", 0), age,
                       tuple(sorted(over, key=lambda o: -o[1])))


def consumer_seen(session: Session, name: str, threads: int, now: dt.datetime | None = None) -> None:
    """Record that the consumer ``name`` is alive; forget consumers silent for a day."""
    now = now or utcnow()
    if not changed_rows(session, update(Consumer).where(Consumer.name == name).values(seen_at=now, threads=threads)):
        session.add(Consumer(name=name[:100], threads=threads, started_at=now, seen_at=now))
    session.execute(delete(Consumer).where(Consumer.seen_at < now - dt.timedelta(days=1)))
    session.flush()


def consumer_gone(session: Session, name: str) -> None:
    """The consumer stopped (cleanly, or its supervisor saw it die): it no longer counts."""
    session.execute(delete(Consumer).where(Consumer.name == name))
