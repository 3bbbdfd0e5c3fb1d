"""Sync jobs on the queue: the ``sync_run`` handler registered (``hourtab.sync.handler``), the schedule, "Sync now".

The schedule rides on the worker's reaper tick: every connection whose ``next_sync_at`` has come gets
one ``sync_run`` job. Moving ``next_sync_at`` is a compare-and-set, so of several workers only one
queues it; a connection whose last job is still queued or running gets no second one; and the runner
itself refuses to run two syncs of one connection at once (a lock fenced by the job's lease).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from flask import Flask
from sqlalchemy.orm import Session

from hourtab.core.db import transaction, utcnow
from hourtab.core.jobs import Job, create_job
from hourtab.sync import service
from hourtab.sync.handler import options, sync_handler, time_limits
from hourtab.sync.limits import Limits
from hourtab.sync.models import Connection

if TYPE_CHECKING:
    from app.jobs.broker import Queue


def register(app: Flask, queue: Queue) -> None:
    budget_s, limit_s = time_limits(Limits.from_settings(app.config))
    queue.register("sync_run", sync_handler(app.config, app.extensions["hourtab.tokens"]),
                   "Syncing from the tracker", limit_s, budget_s=budget_s)


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
    minutes = options(app.config).minutes
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
