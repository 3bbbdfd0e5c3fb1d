"""Consuming the queue: ``hourtab worker`` in the foreground, or the child process ``hourtab serve`` keeps.

Besides Huey's consumer threads, each worker runs a reaper thread. Every third of the lease it
says the worker is alive (``/healthz`` counts consumers), hands back the jobs whose worker stopped
renewing their lease (a host lost, a ``kill -9``), and sends a message for each waiting job the
broker lacks (a broker restarted without persistence, a message lost with its consumer): the job
rows are the truth. It does so at once when the worker starts and when it reaches the broker
again after losing it. While the broker is unreachable the worker logs one line per attempt,
with back-off, not a traceback per thread and poll.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Flask
from huey.consumer import Consumer, Scheduler
from huey.consumer import Worker as HueyWorker
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from app.jobs.broker import start
from app.jobs.sync import queue_due_syncs as queue_due
from hourtab.core.db import utcnow
from hourtab.core.jobrunner import this_worker
from hourtab.core.jobs import Job
from hourtab.retainers.models import Retainer

if TYPE_CHECKING:
    from huey import Huey


log = logging.getLogger(__name__)


class BrokerWatch:
    """Shared by a worker's threads: one logged line and one back-off per attempt to reach the broker."""

    def __init__(self, first_s: float = 0.5, most_s: float = 30.0) -> None:
        self.first_s, self.most_s = first_s, most_s
        self.attempts = 0
        self.reconnected = threading.Event()
        self._next = 0.0
        self._lock = threading.Lock()

    def failed(self, error: BaseException) -> float:
        """Seconds to wait before trying again (a thread that failed during another's wait just waits)."""
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                return self._next - now
            self.attempts += 1
            delay = min(self.most_s, self.first_s * 2 ** (self.attempts - 1))
            self._next = now + delay
            log.warning("queue broker unreachable (%s: %s); attempt %d, next in %.1f s",
                        type(error).__name__, str(error).splitlines()[0][:200] if str(error) else "", self.attempts,
                        delay)
            return delay

    def reached(self) -> None:
        if not self.attempts:
            return
        with self._lock:
            if self.attempts:
                log.warning("queue broker reachable again after %d failed attempt(s)", self.attempts)
                self.attempts, self._next = 0, 0.0
                self.reconnected.set()


class _Worker(HueyWorker):
    watch: BrokerWatch

    def loop(self, now: dt.datetime | None = None) -> None:
        try:
            task = self.huey.dequeue()
        except Exception as e:  # the broker's own errors (redis, sqlite3): one line, then back off
            self.stop_flag.wait(self.watch.failed(e))
            return
        self.watch.reached()
        if task is None:
            if not self.huey.storage.blocking:
                self.sleep()
            return
        self.delay = self.default_delay
        try:
            self.huey.execute(task, now)
        except Exception as e:  # the job runner catches its own errors: this is Huey's bookkeeping
            self.watch.failed(e)


class _Scheduler(Scheduler):
    """HourTab schedules nothing in Huey (no delays, no periodic tasks; the reaper keeps time), so
    its scheduler only waits: polling the broker's schedule would log a traceback a second while
    the broker is down."""

    def loop(self, now: dt.datetime | None = None) -> None:
        self.stop_flag.wait(self.interval)


class _Consumer(Consumer):
    worker_class = _Worker
    scheduler_class = _Scheduler

    def __init__(self, huey: Huey, watch: BrokerWatch, **options: Any) -> None:
        self.watch = watch
        super().__init__(huey, **options)

    def _create_worker(self) -> _Worker:
        worker = super()._create_worker()
        worker.watch = self.watch
        return worker


class Worker:
    """One consumer process's threads: Huey's (``threads``, or the ``HOURTAB_WORKER_THREADS`` setting),
    plus the reaper. Each job runs in a database session of its own (``JobRunner``)."""

    def __init__(self, app: Flask, threads: int | None = None) -> None:
        queue = app.extensions["hourtab.queue"]
        if queue.huey.immediate:
            raise RuntimeError("the queue is in immediate mode; nothing to consume")
        self.app, self.queue = app, queue
        self.threads: int = threads or app.config["WORKER_THREADS"]
        self.name = this_worker()
        self.watch = BrokerWatch()
        self.stopping = threading.Event()
        self.consumer = _Consumer(queue.huey, self.watch, workers=self.threads, worker_type="thread",
                                  periodic=False, initial_delay=0.05, backoff=1.3, max_delay=0.5)
        self._reaper = threading.Thread(target=self._reap, daemon=True, name="hourtab-reaper")

    def run(self) -> None:
        """Consume until SIGINT/SIGTERM (Huey's signal handling: the main thread only)."""
        self._reaper.start()
        try:
            self.consumer.run()
        finally:
            self._stop_reaper()

    def start(self) -> None:
        """Consume in background threads (tests); :meth:`stop` ends them."""
        self._reaper.start()
        self.consumer.start()

    def stop(self) -> None:
        self.consumer.stop(graceful=True)
        self._stop_reaper()

    def _stop_reaper(self) -> None:
        self.stopping.set()
        self._reaper.join(timeout=10)
        try:
            self.queue.runner.consumer_stopped(self.name)
        except Exception as e:  # the row ages out within a lease anyway
            log.warning("could not deregister consumer %s (%s)", self.name, type(e).__name__)

    def _reap(self) -> None:
        interval = max(0.5, self.app.config["JOB_LEASE_S"] / 3)
        next_checks = time.monotonic() + 60      # let a fresh deployment settle first
        while not self.stopping.is_set():
            self.watch.reconnected.clear()
            reap_once(self.app, self.name, self.threads, self.watch)
            _quietly(queue_due_syncs, self.app)
            if time.monotonic() >= next_checks:
                next_checks = time.monotonic() + 600
                _quietly(queue_periodic_checks, self.app)
            # Sleep until the next tick, or until a thread reaches the broker again after losing it.
            deadline = time.monotonic() + interval
            while not self.stopping.is_set() and time.monotonic() < deadline:
                if self.watch.reconnected.wait(min(0.25, max(0.0, deadline - time.monotonic()))):
                    break


def reap_once(app: Flask, name: str, threads: int, watch: BrokerWatch | None = None) -> list[str]:
    """One reaper tick: say this consumer is alive, hand back lost jobs, send what the broker lacks."""
    queue = app.extensions["hourtab.queue"]
    try:
        queue.runner.consumer_alive(name, threads)
    except SQLAlchemyError as e:  # the database may be briefly unreachable; try again next tick
        log.warning("could not record consumer %s (%s); next tick", name, type(e).__name__)
        return []
    try:
        pending = queue.pending_ids()
    except Exception as e:  # the broker's own errors
        if watch is not None:
            watch.failed(e)
        return []
    if watch is not None:
        watch.reached()
    try:
        sent = queue.runner.resend(pending)
    except SQLAlchemyError as e:
        log.warning("could not look for lost jobs (%s); next tick", type(e).__name__)
        return []
    if sent:
        log.warning("sent %d waiting job(s) the queue broker had no message for: %s", len(sent),
                    ", ".join(sent[:10]))
    return sent


def queue_periodic_checks(app: Flask, every_s: float = 3600.0) -> int:
    """Periods close with time, not imports: queue an alert check per account once ``every_s``.

    Several workers may all get here; the jobs table says whether a check was queued recently, and a
    duplicate check sends nothing twice anyway (alert events are unique).
    """


    if not app.config.get("SMTP_URL"):
        return 0
    since = utcnow() - dt.timedelta(seconds=every_s * 0.9)
    queued = 0
    with app.extensions["hourtab.sessionmaker"]() as session:
        accounts = session.scalars(select(Retainer.account_id).where(
            Retainer.active.is_(True), Retainer.public_token.is_not(None)).distinct()).all()
        recent = set(session.scalars(select(Job.account_id).where(Job.kind == "alerts_check",
                                                                  Job.created_at >= since)))
        for account_id in accounts:
            if account_id not in recent:
                app.extensions["hourtab.queue"].enqueue(start(session, account_id, "alerts_check", {}).id)
                queued += 1
    return queued


def _quietly(step: Callable[[Flask], object], app: Flask) -> None:
    """Run one periodic step (alert checks, due syncs); a failure is one log line, tried again next time."""
    try:
        step(app)
    except Exception as e:  # the database may be briefly unreachable; try again next time
        log.warning("could not %s (%s); next time", step.__name__.replace("_", " "), type(e).__name__)


def queue_due_syncs(app: Flask) -> int:
    return queue_due(app)


def run_worker(app: Flask, threads: int | None = None, parent_pid: int | None = None) -> None:
    """Consume jobs until SIGINT/SIGTERM (or until ``parent_pid`` is gone)."""
    if parent_pid:
        threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    Worker(app, threads).run()


def _watch_parent(parent_pid: int) -> None:
    """Leave with the server that started us, even if it was killed without cleaning up."""
    while os.getppid() == parent_pid:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)
