"""The task queue (Huey): SQLite in the data folder by default, Redis when ``HOURTAB_REDIS_URL`` is set.

Only a job id travels through the queue; the ``jobs`` row holds parameters, progress and errors
(``hourtab.core.jobs``). Tests (``TESTING``) run jobs inline unless they set ``QUEUE_IMMEDIATE`` False,
so a request that enqueues work finds it done when it returns.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from huey import Huey, RedisHuey, SqliteHuey


class Queue:
    """One Huey instance per app, with the single ``run_job`` task registered on it."""

    def __init__(self, app: Flask) -> None:
        from app.jobs.handlers import make_handlers
        from hourtab.core.errors import HourTabError
        from hourtab.core.jobs import JobRunner
        from incidents.errors import IncidentsError

        cfg = app.config
        self.huey = _make_huey(cfg)
        self.runner = JobRunner(app.extensions["hourtab.sessionmaker"], make_handlers(app),
                                worker=f"{socket.gethostname()}:{os.getpid()}", lease_s=cfg["JOB_LEASE_S"],
                                safe_errors=(HourTabError, IncidentsError))
        self._task = self.huey.task(name="run_job")(self._run)

    def _run(self, job_id: str) -> str:
        return self.runner.run(job_id)

    def enqueue(self, job_id: str) -> None:
        """Hand the job to a worker (call after the job row is committed)."""
        self._task(job_id)


def _make_huey(cfg: dict[str, Any]) -> Huey:
    name = cfg.get("QUEUE_NAME", "hourtab")
    if cfg.get("QUEUE_IMMEDIATE", cfg.get("TESTING", False)):
        return Huey(name, immediate=True, results=False)
    if cfg.get("REDIS_URL"):
        return RedisHuey(name, url=cfg["REDIS_URL"], results=False)
    return SqliteHuey(name, filename=str(Path(cfg["DATA_DIR"]) / "queue.db"), results=False)


def init_app(app: Flask) -> None:
    app.extensions["hourtab.queue"] = Queue(app)


def queue() -> Queue:
    return current_app.extensions["hourtab.queue"]


def enqueue(job_id: str) -> None:
    queue().enqueue(job_id)
