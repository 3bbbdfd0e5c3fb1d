"""Running consumers: ``hourtab worker`` in the foreground, or one child process beside ``hourtab serve``.

Besides Huey's consumer threads, each worker runs a small reaper: every third of the lease it
queues again the jobs whose worker stopped renewing their lease (a host lost, a ``kill -9``).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading

from flask import Flask

log = logging.getLogger(__name__)


def reap_once(app: Flask) -> list[str]:
    """Queue again every job whose lease has run out; returns their ids."""
    from hourtab.core.jobs import requeue_stale

    with app.extensions["hourtab.sessionmaker"]() as session:
        ids = requeue_stale(session, lost_after_s=max(300.0, 10 * app.config["JOB_LEASE_S"]))
        session.commit()
    queue = app.extensions["hourtab.queue"]
    for job_id in ids:
        log.warning("job %s lost its worker; queued again", job_id)
        queue.enqueue(job_id)
    return ids


def queue_periodic_checks(app: Flask, every_s: float = 3600.0) -> int:
    """Periods close with time, not imports: queue an alert check per account once ``every_s``.

    Several workers may all get here; the jobs table says whether a check was queued recently, and a
    duplicate check sends nothing twice anyway (alert events are unique).
    """
    import datetime as dt

    from sqlalchemy import select

    from app.jobs.handlers import start
    from hourtab.core.db import utcnow
    from hourtab.core.jobs import Job
    from hourtab.retainers.models import Retainer

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


def _reaper(app: Flask, stop: threading.Event) -> None:
    import time

    from app.jobs.sync import queue_due_syncs

    interval = max(0.5, app.config["JOB_LEASE_S"] / 3)
    next_checks = time.monotonic() + 60      # let a fresh deployment settle first
    while True:
        try:
            reap_once(app)
            queue_due_syncs(app)
            if time.monotonic() >= next_checks:
                next_checks = time.monotonic() + 600
                queue_periodic_checks(app)
        except Exception:  # the database may be briefly unreachable; try again next tick
            log.warning("could not check for lost jobs or queue alert checks and syncs", exc_info=True)
        if stop.wait(interval):
            return


def run_worker(app: Flask, threads: int = 2, parent_pid: int | None = None) -> None:
    """Consume jobs until SIGINT/SIGTERM (or until ``parent_pid`` is gone)."""
    huey = app.extensions["hourtab.queue"].huey
    if huey.immediate:
        raise RuntimeError("the queue is in immediate mode; nothing to consume")
    stop = threading.Event()
    threading.Thread(target=_reaper, args=(app, stop), daemon=True, name="hourtab-reaper").start()
    if parent_pid:
        threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    consumer = huey.create_consumer(workers=threads, worker_type="thread", periodic=False,
                                    initial_delay=0.05, backoff=1.3, max_delay=0.5)
    try:
        consumer.run()
    finally:
        stop.set()


def _watch_parent(parent_pid: int) -> None:
    """Leave with the server that started us, even if it was killed without cleaning up."""
    import signal
    import time

    while os.getppid() == parent_pid:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)


def _child(threads: int, parent_pid: int) -> None:
    from app import create_app

    run_worker(create_app(), threads, parent_pid=parent_pid)


def start_in_process(threads: int = 2) -> multiprocessing.Process:
    """A consumer beside the web server, so one start command gives a complete app."""
    process = multiprocessing.get_context("spawn").Process(target=_child, args=(threads, os.getpid()),
                                                           name="hourtab-worker", daemon=False)
    process.start()
    return process
