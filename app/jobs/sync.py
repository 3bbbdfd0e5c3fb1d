"""Sync jobs on the queue: the ``sync_run`` handler, the schedule, "Sync now".

The schedule rides on the worker's reaper tick: every connection whose ``next_sync_at`` has come gets
one ``sync_run`` job. Moving ``next_sync_at`` is a compare-and-set, so of several workers only one
queues it; a connection whose last job is still queued or running gets no second one; and the runner
itself refuses to run two syncs of one connection at once (a lock fenced by the job's lease).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from flask import Flask
from sqlalchemy.orm import Session

from hourtab.core.db import transaction, utcnow
from hourtab.core.jobs import Job, create_job
from hourtab.sync import notices, runner, service
from hourtab.sync.errors import SyncFailed
from hourtab.sync.limits import Limits
from hourtab.sync.models import Connection

if TYPE_CHECKING:
    from app.jobs.broker import Queue



def options(app: Flask) -> runner.Options:
    return runner.Options(minutes=float(app.config.get("SYNC_MINUTES", runner.DEFAULT_MINUTES)),
                          limits=Limits.from_settings(app.config))


def register(app: Flask, queue: Queue) -> None:
    budget_s, limit_s = time_limits(Limits.from_settings(app.config))
    queue.register("sync_run", lambda session, job: run_sync(app, session, job), "Syncing from the tracker",
                   limit_s, budget_s=budget_s)


#: Seconds a sync may take past its reading budget to write what it read (a year of entries, on a busy database).
WRITE_ALLOWANCE_S = 30


def time_limits(limits: Limits) -> tuple[float, float]:
    """(budget, hard limit) of a ``sync_run`` job: past its budget ``/healthz`` shows the consumer busy;
    at the hard limit the job is failed and its thread stopped."""
    budget = limits.sync_s + limits.request_s + WRITE_ALLOWANCE_S
    return budget, 2 * budget


def run_sync(app: Flask, session: Session, job: Job) -> dict[str, Any]:
    """The ``sync_run`` handler: one sync; a refused token also tells the consultant by e-mail."""
    outcome = runner.sync_job(session, job, app.extensions["hourtab.tokens"], options(app))
    if outcome.paused_now:
        notices.tell_paused(session, job.account_id, outcome, smtp_url=app.config.get("SMTP_URL"),
                            public_url=app.config["PUBLIC_URL"], sender=app.config["MAIL_FROM"])
    if outcome.status in ("refused", "failed", "out_of_budget"):
        raise SyncFailed(outcome.error, outcome.as_json())
    if any(outcome.counts.get(k) for k in ("new", "changed", "removed")):
        if app.config.get("SMTP_URL"):   # committed with this job's result; the runner hands it to the queue
            create_job(session, job.account_id, "alerts_check", {})
    return outcome.as_json()


def queue_sync(app: Flask, session: Session, connection: Connection, trigger: str) -> Job:
    """A ``sync_run`` job for the connection (committed, then queued); the one already waiting if any."""
    waiting = service.pending_job(session, connection)
    if waiting is not None:
        return waiting
    with transaction(session):
        job = create_job(session, connection.account_id, "sync_run",
                         {"connection_id": connection.id, "trigger": trigger})
        connection.last_job_id = job.id
    app.extensions["hourtab.queue"].enqueue(job.id)
    return job


#: Seconds between two prunings of old sync jobs by one worker.
PRUNE_EVERY_S = 3600


def queue_due_syncs(app: Flask, now: dt.datetime | None = None) -> int:
    """Queue a sync for every connection that is due (and, once an hour, drop week-old done sync jobs);
    returns how many were queued."""
    now = now or utcnow()
    minutes = options(app).minutes
    queued = 0
    with app.extensions["hourtab.sessionmaker"]() as session:
        if now.timestamp() - app.extensions.get("hourtab.sync_pruned", 0.0) >= PRUNE_EVERY_S:
            with transaction(session):
                service.prune_jobs(session, now)
            app.extensions["hourtab.sync_pruned"] = now.timestamp()
        for connection_id, due_at in service.due(session, now):
            with transaction(session):
                won = service.reserve(session, connection_id, due_at, service.next_sync(now, minutes))
            if not won:
                continue        # another worker moved it first, and queues it
            connection = session.get(Connection, connection_id)
            if connection is not None and service.pending_job(session, connection) is None:
                queue_sync(app, session, connection, "schedule")
                queued += 1
    return queued
