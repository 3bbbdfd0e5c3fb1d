"""The task queue (Huey): SQLite in the data folder by default, Redis when ``HOURTAB_REDIS_URL`` is set.

Only a job id travels through the queue, as a ticket to run one waiting job; the ``jobs`` row
holds parameters, progress and errors (``hourtab.core.jobs``), and a worker chooses which waiting
job a ticket runs (fairly between accounts). Tests (``TESTING``) run jobs inline unless they set
``QUEUE_IMMEDIATE`` False, so a request that enqueues work finds that job done when it returns.

Each kind of job is registered once, with its handler, its title and its time limit: the
packages' own kinds in ``app.jobs.handlers``, the demo loader's in ``app.demo``.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, current_app
from sqlalchemy.orm import Session

from app.jobs import alerts, handlers, sync
from app.jobs.broker import Queue, start


def init_app(app: Flask) -> None:
    queue = app.extensions["hourtab.queue"] = Queue(app)
    handlers.register(app, queue)
    alerts.register(app, queue)
    sync.register(app, queue)


def queue() -> Queue:
    return current_app.extensions["hourtab.queue"]


def enqueue(job_id: str) -> None:
    queue().enqueue(job_id)


def title(kind: str) -> str:
    found = queue().kinds.get(kind)
    return found.title if found else kind


def queue_job(session: Session, account_id: int, kind: str, params: dict[str, Any]) -> str:
    """Create a job (committed) and hand it to the queue; returns its id."""
    job = start(session, account_id, kind, params)
    enqueue(job.id)
    return job.id
