"""Running jobs: claim, heartbeat, time limit, progress, and the one commit of a job's work.

The runner owns the transaction of every job it runs: a handler works in the session it is given
and never commits; when it returns, its writes commit together with the job's "done", and only
if this attempt still owns the job (a presumed-dead worker that wakes up keeps nothing). A handler
that must make work durable before a side effect (an e-mail handed to SMTP) calls
:func:`checkpoint`, which is the same fenced commit, in the middle. Jobs created inside a job are
queued once the transaction that created them has committed.

Every kind of job has a hard time limit. At the limit the job is failed at once, fenced like a lost
attempt (nothing it does afterwards is kept), and its thread is interrupted: at its next progress
report, or at the next Python instruction it runs.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from hourtab.core import progress
from hourtab.core.db import changed_rows, utcnow
from hourtab.core.errors import HourTabError
from hourtab.core.jobs import (
    CREATED,
    Handler,
    Job,
    consumer_gone,
    consumer_seen,
    fair_order,
    requeue_stale,
    waiting_ids,
)

log = logging.getLogger(__name__)

#: ``session.info`` key of the running job's (id, attempt, after-commit hook).
_OWNER = "hourtab.jobs.owner"
DEFAULT_TIME_LIMIT_S = 900.0


def this_worker() -> str:
    """``host:pid``: how a job's claim and the supervisor name the process that runs it."""
    return f"{socket.gethostname()}:{os.getpid()}"


class JobTimeLimit(BaseException):  # noqa: N818 - a BaseException, so no handler's `except Exception` eats it
    """The job ran past its kind's time limit (raised inside the handler's thread)."""


class _Interrupted(JobTimeLimit):
    """The time limit raised from outside the job's thread (by :meth:`_Deadline.expire`)."""


class Superseded(BaseException):  # noqa: N818 - as above: the handler must not carry on
    """This attempt no longer owns the job (its lease ran out, or its time limit was reached)."""


@dataclass(frozen=True)
class _Owner:
    job_id: str
    attempt: int
    committed: Callable[[Session], None]


def checkpoint(session: Session, phase: str | None = None) -> None:
    """Commit what the running job has written so far, if this attempt still owns the job.

    For work that must be durable before a side effect outside the database; raises
    :class:`Superseded` (and keeps nothing) when another attempt owns the job now. ``phase``: what the
    job's page says it does next, recorded in the same commit (a progress report is a commit of its own).
    """
    owner: _Owner | None = session.info.get(_OWNER)
    if owner is None:
        raise RuntimeError("checkpoint() is for job handlers, inside JobRunner.run")
    shown = {"phase": phase[:100]} if phase is not None else {}
    _fenced_commit(session, owner, updated_at=utcnow(), **shown)


def _fenced_commit(session: Session, owner: _Owner, **values: Any) -> None:
    hit = changed_rows(session, update(Job).where(Job.id == owner.job_id, Job.attempts == owner.attempt,
                                                  Job.status == "running").values(**values))
    if not hit:
        session.rollback()
        raise Superseded(f"job {owner.job_id} attempt {owner.attempt} no longer owns the job")
    session.commit()
    owner.committed(session)


class _Deadline:
    """The time limit of one run: checked at progress reports, enforced by interrupting the thread."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s, self.at = limit_s, time.monotonic() + limit_s
        self.expired = False
        self._lock = threading.Lock()
        self._thread: int | None = None

    def check(self) -> None:
        if self.expired or time.monotonic() >= self.at:
            raise JobTimeLimit(f"ran past {self.limit_s:g} s")

    @contextmanager
    def armed(self) -> Iterator[None]:
        with self._lock:
            self._thread = threading.get_ident()
        try:
            yield
        finally:
            with self._lock:
                self._thread = None
                pending = self.expired and not isinstance(sys.exc_info()[1], _Interrupted)
            if pending:   # an interrupt set but not yet raised must not hit the runner's own code
                _let_interrupt_fire()

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._thread is not None:
                _interrupt(self._thread, _Interrupted)


def _let_interrupt_fire() -> None:
    """Take a pending interrupt here, where it is expected, instead of cancelling it.

    Cancelling (``PyThreadState_SetAsyncExc`` with NULL) leaves CPython 3.11's eval breaker set for
    good; under a tracer (coverage, a debugger) every thread then spins at its next call. The
    interrupt fires at the loop's first backward jump; the bound covers a handler that swallowed it.
    """
    try:
        for _ in range(1000):
            pass
    except _Interrupted:
        pass


def _interrupt(thread_id: int, exc: type[BaseException]) -> None:
    """Raise ``exc`` in another thread at its next instruction.

    CPython's documented ``PyThreadState_SetAsyncExc`` is the only way to stop a thread from
    outside; a job's thread is stopped only after the job is failed and fenced off.
    """
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


class Slots:
    """At most ``limit`` holders at once among a worker's threads (the memory-heavy kinds of job).

    A job waiting for a slot is still running under its time limit, and the limit's interrupt only
    fires between Python instructions, never inside a blocked ``acquire``: so the wait is a loop of
    short acquires, and a job that waits past its limit is stopped like any other.
    """

    def __init__(self, limit: int, poll_s: float = 0.25) -> None:
        self._slots = threading.BoundedSemaphore(limit)
        self._poll_s = poll_s
        self._lock = threading.Lock()
        self.waiting = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            self.waiting += 1
        acquired = False
        try:
            # The flag is set in the same step the acquire returns, so an interrupt that lands right
            # after a successful acquire still releases the slot below instead of leaking it.
            while not acquired:
                acquired = self._slots.acquire(timeout=self._poll_s)
            with self._lock:
                self.waiting -= 1
            yield
        finally:
            if acquired:
                self._slots.release()
            else:
                with self._lock:
                    self.waiting -= 1


class JobRunner:
    """Runs jobs: claims one, heartbeats its lease, enforces its time limit, commits its work."""

    def __init__(self, sessions: sessionmaker[Session], handlers: Mapping[str, Handler], *, worker: str,
                 lease_s: float = 60.0, safe_errors: tuple[type[BaseException], ...] = (HourTabError,),
                 progress_every_s: float = 0.25, enqueue: Callable[[str], None] | None = None,
                 time_limits: Mapping[str, float] | None = None,
                 default_time_limit_s: float = DEFAULT_TIME_LIMIT_S) -> None:
        self.sessions, self.handlers, self.worker = sessions, handlers, worker
        self.lease_s, self.safe_errors, self.progress_every_s = lease_s, safe_errors, progress_every_s
        self.enqueue = enqueue
        self.time_limits = time_limits if time_limits is not None else {}
        self.default_time_limit_s = default_time_limit_s

    def run(self, job_id: str) -> str:
        """Run this job if it can be claimed; returns its final status (or 'skipped')."""
        attempt = self._claim(job_id)
        return "skipped" if attempt is None else self._execute(job_id, attempt)

    def run_next(self) -> str:
        """Run the job a free worker should take (:func:`fair_order`); 'idle' when none is waiting."""
        for _ in range(3):      # another worker may claim the same candidates first
            with self.sessions() as s:
                candidates = fair_order(s)
            if not candidates:
                return "idle"
            for job_id in candidates:
                attempt = self._claim(job_id)
                if attempt is not None:
                    return self._execute(job_id, attempt)
        return "idle"

    def resend(self, pending: Collection[str], settle_s: float = 0.5) -> list[str]:
        """Hand back jobs whose lease ran out, then send a message for each waiting job the broker lacks.

        ``pending`` is the job ids of the messages in the broker. Each message runs one waiting job,
        so the broker needs as many messages as there are waiting jobs; jobs queued within
        ``settle_s`` are left to the request that queued them. Returns the ids sent.
        """
        with self.sessions() as s:
            requeue_stale(s)
            s.commit()
            waiting = waiting_ids(s, settled_before=utcnow() - dt.timedelta(seconds=settle_s))
        named = set(pending)
        lacking = max(0, len(waiting) - len(pending))
        sent = [job_id for job_id in waiting if job_id not in named][:lacking]
        if self.enqueue is not None:
            for job_id in sent:
                self.enqueue(job_id)
        return sent

    def consumer_alive(self, name: str, threads: int) -> None:
        with self.sessions() as s:
            consumer_seen(s, name, threads)
            s.commit()

    def consumer_stopped(self, name: str) -> None:
        with self.sessions() as s:
            consumer_gone(s, name)
            s.commit()

    def _execute(self, job_id: str, attempt: int) -> str:
        stop = threading.Event()
        with self.sessions() as session:
            job = session.get(Job, job_id)
            if job is None:       # its account was deleted since the claim
                return "skipped"
            kind = job.kind
            deadline = _Deadline(self.time_limits.get(kind, self.default_time_limit_s))
            beat = threading.Thread(target=self._heartbeat, args=(job_id, attempt, stop, deadline), daemon=True)
            beat.start()
            session.info[_OWNER] = _Owner(job_id, attempt, self._queue_created)
            session.info[CREATED] = []
            try:
                with progress.reporting(self._reporter(job_id, attempt, deadline)), deadline.armed():
                    handler = self.handlers.get(kind)
                    if handler is None:
                        raise HourTabError(f"no worker here runs {kind!r} jobs")
                    result = handler(session, job)
                    _fenced_commit(session, session.info[_OWNER], status="done", result=result or {}, error="",
                                   done=Job.total, finished_at=utcnow(), updated_at=utcnow(), lease_until=None)
                return "done"
            except Superseded:
                session.rollback()
                log.warning("job %s: attempt %d no longer owns it; its work was not kept", job_id, attempt)
                return "superseded"
            except JobTimeLimit:
                session.rollback()
                return self._finish(job_id, attempt, status="failed", error=_too_long(deadline.limit_s))
            except self.safe_errors as e:
                session.rollback()   # an error may carry what the job's page and its caller show of it
                return self._finish(job_id, attempt, status="failed", error=str(e),
                                    result=getattr(e, "result", None) or {})
            except Exception:
                session.rollback()
                log.exception("job %s (%s) failed", job_id, kind)
                return self._finish(job_id, attempt, status="failed",
                                    error=f"The job failed unexpectedly (reference {job_id[:8]}); "
                                          "retry it, and if it fails again report the reference.")
            finally:
                stop.set()
                beat.join(timeout=5)
                session.info.pop(_OWNER, None)
                session.info.pop(CREATED, None)

    def _queue_created(self, session: Session) -> None:
        created, session.info[CREATED] = session.info.get(CREATED, []), []
        if self.enqueue is not None:
            for job_id in created:
                self.enqueue(job_id)

    def _claim(self, job_id: str) -> int | None:
        """The attempt number this run owns the job under; ``None`` when it is not claimable (one statement:
        of two workers claiming at once, the second finds it running)."""
        now = utcnow()
        claimable = (Job.status == "queued") | ((Job.status == "running") & (Job.lease_until < now))
        with self.sessions() as s:
            attempt = s.execute(update(Job).where(Job.id == job_id, claimable).values(
                status="running", attempts=Job.attempts + 1, worker=self.worker[:100], started_at=now,
                updated_at=now, lease_until=now + dt.timedelta(seconds=self.lease_s), phase="Starting", error="")
                .returning(Job.attempts)).scalar()
            s.commit()
            return attempt

    def _write(self, job_id: str, attempt: int, **values: Any) -> int:
        with self.sessions() as s:
            hit = changed_rows(s, update(Job).where(Job.id == job_id, Job.attempts == attempt,
                                                    Job.status == "running").values(updated_at=utcnow(), **values))
            s.commit()
            return hit

    def _finish(self, job_id: str, attempt: int, *, status: str, error: str = "",
                result: dict[str, Any] | None = None) -> str:
        self._write(job_id, attempt, status=status, error=error[:2000], result=result or {}, finished_at=utcnow(),
                    lease_until=None)
        return status

    def _heartbeat(self, job_id: str, attempt: int, stop: threading.Event, deadline: _Deadline) -> None:
        while not stop.wait(max(0.0, min(self.lease_s / 3, deadline.at - time.monotonic()))):
            try:
                if time.monotonic() >= deadline.at:
                    if self._write(job_id, attempt, status="failed", finished_at=utcnow(), lease_until=None,
                                   error=_too_long(deadline.limit_s)):
                        log.warning("job %s ran past its %g s limit: failed, and its thread stopped",
                                    job_id, deadline.limit_s)
                        deadline.expire()
                    return
                self._write(job_id, attempt, lease_until=utcnow() + dt.timedelta(seconds=self.lease_s))
            except Exception:  # a missed beat is retried on the next tick; the lease has slack
                log.warning("could not renew the lease of job %s", job_id, exc_info=True)

    def _reporter(self, job_id: str, attempt: int, deadline: _Deadline) -> progress.Reporter:
        last_at, last_phase = 0.0, ""

        def report(phase: str, done: int, total: int) -> None:
            nonlocal last_at, last_phase
            deadline.check()
            now = time.monotonic()
            # Throttled, except the report that says a phase is finished; with nothing to count (an
            # archive of empty files totals 0 bytes) no report is that one.
            finished = total > 0 and done >= total
            if phase == last_phase and now - last_at < self.progress_every_s and not finished:
                return
            last_at, last_phase = now, phase
            try:
                self._write(job_id, attempt, phase=phase[:100], done=done, total=total)
            except Exception:   # progress is for the page; losing one report must not fail the job
                log.warning("could not record the progress of job %s", job_id, exc_info=True)

        return report


def _too_long(limit_s: float) -> str:
    return f"The job was stopped: it ran past the {limit_s:g} s limit for this kind of job."
