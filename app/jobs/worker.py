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
    from hourtab.jobs.service import requeue_stale

    with app.extensions["hourtab.sessionmaker"]() as session:
        ids = requeue_stale(session)
        session.commit()
    queue = app.extensions["hourtab.queue"]
    for job_id in ids:
        log.warning("job %s lost its worker; queued again", job_id)
        queue.enqueue(job_id)
    return ids


def _reaper(app: Flask, stop: threading.Event) -> None:
    interval = max(0.5, app.config["JOB_LEASE_S"] / 3)
    while True:
        try:
            reap_once(app)
        except Exception:  # the database may be briefly unreachable; try again next tick
            log.warning("could not check for lost jobs", exc_info=True)
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
