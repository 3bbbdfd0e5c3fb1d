"""``hourtab worker``: consume queued jobs (evidence ingest, PDF renders, alert e-mails), or check the queue."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from app.cli.context import queue_app
from app.config import MAX_WORKER_THREADS

if TYPE_CHECKING:
    from flask import Flask



@click.command("worker")
@click.option("--threads", type=click.IntRange(1, MAX_WORKER_THREADS),
              help="Jobs run at once by this process.  [default: HOURTAB_WORKER_THREADS]")
@click.option("--check", is_flag=True,
              help="Do not consume: print the queue's state as JSON and exit 1 when jobs wait with no "
                   "consumer alive, or have waited longer than --max-wait (for monitoring).")
@click.option("--max-wait", default=300.0, show_default=True, type=click.FloatRange(0),
              help="With --check: seconds the longest waiting job may have waited.")
@click.option("--parent-pid", type=int, hidden=True, help="Leave when this process is gone (`serve` sets it).")
def worker(threads: int | None, check: bool, max_wait: float, parent_pid: int | None) -> None:
    """Run queue consumers until interrupted (one per worker host; `serve` runs one by default)."""
    from app.jobs.worker import run_worker

    # Given on the command line, the thread count also sizes the database pool (``pool_room``).
    with queue_app({"HOURTAB_WORKER_THREADS": str(threads)} if threads else None) as app:
        if check:
            _check(app, max_wait)
            return
        if app.extensions["hourtab.queue"].huey.immediate:
            raise click.UsageError("the queue runs jobs inline here (TESTING); there is nothing to consume")
        queue = app.config["REDIS_URL"] and "Redis" or "SQLite"
        threads = app.config["WORKER_THREADS"]
        click.echo(f"HourTab worker: {threads} thread(s) on the {queue} queue")
        run_worker(app, threads, parent_pid=parent_pid)


def _check(app: Flask, max_wait: float) -> None:
    from hourtab.core.jobs import queue_health

    with app.extensions["hourtab.sessionmaker"]() as session:
        health = queue_health(session, app.config["JOB_LEASE_S"])
    click.echo(json.dumps(health.as_dict()))
    problem = None
    if health.stalled:
        problem = f"{health.waiting} job(s) waiting and no consumer seen in the last {app.config['JOB_LEASE_S']:g} s"
    elif health.oldest_waiting_s is not None and health.oldest_waiting_s > max_wait:
        problem = f"a job has waited {health.oldest_waiting_s:.0f} s (more than {max_wait:g} s)"
    if problem:
        click.echo(f"Queue unhealthy: {problem}.", err=True)
        sys.exit(1)


commands = [worker]
