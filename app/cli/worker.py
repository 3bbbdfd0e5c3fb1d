"""``hourtab worker``: consume queued jobs (evidence ingest, PDF renders, alert e-mails)."""

from __future__ import annotations

import click

from app.cli.context import queue_app


@click.command("worker")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1, 64),
              help="Jobs run at once by this process.")
def worker(threads: int) -> None:
    """Run queue consumers until interrupted (one per worker host; `serve` runs one by default)."""
    from app.jobs.worker import run_worker

    with queue_app() as app:
        if app.extensions["hourtab.queue"].huey.immediate:
            raise click.UsageError("the queue runs jobs inline here (TESTING); there is nothing to consume")
        queue = app.config["REDIS_URL"] and "Redis" or "SQLite"
        click.echo(f"HourTab worker: {threads} thread(s) on the {queue} queue")
        run_worker(app, threads)


commands = [worker]
