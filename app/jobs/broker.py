"""The broker side of the queue: one Huey instance per app, and the registry of job kinds.

Only a job id travels through the queue, as a ticket to run one waiting job; the ``jobs`` row
holds parameters, progress and errors (``hourtab.core.jobs``), and a worker chooses which waiting
job a ticket runs (fairly between accounts, ``hourtab.core.jobs.fair_order``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask
from huey import Huey, RedisHuey, SqliteHuey
from sqlalchemy.orm import Session

from hourtab.core.db import transaction
from hourtab.core.errors import HourTabError
from hourtab.core.jobrunner import JobRunner, this_worker
from hourtab.core.jobs import Handler, Job, create_job
from incidents.errors import IncidentsError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kind:
    title: str             # what the job page calls it
    time_limit_s: float    # a job of this kind running longer is failed and stopped
    budget_s: float        # a job running longer keeps its consumer busy past its budget (``/healthz``)


class Queue:
    """One Huey instance per app, with the single ``run_job`` task registered on it."""

    def __init__(self, app: Flask) -> None:
        cfg = app.config
        self.huey = _make_huey(cfg)
        self.kinds: dict[str, Kind] = {}
        self._handlers: dict[str, Handler] = {}
        self._limits: dict[str, float] = {}
        self.runner = JobRunner(app.extensions["hourtab.sessionmaker"], self._handlers,
                                worker=this_worker(), lease_s=cfg["JOB_LEASE_S"],
                                safe_errors=(HourTabError, IncidentsError), enqueue=self.enqueue,
                                time_limits=self._limits)
        self._task = self.huey.task(name="run_job")(self._run)

    def register(self, kind: str, handler: Handler, title: str, time_limit_s: float,
                 budget_s: float | None = None) -> None:
        """Make ``kind`` runnable here: ``handler(session, job) -> result``, stopped past ``time_limit_s``;
        ``/healthz`` shows one running past ``budget_s`` (its time limit unless said)."""
        self.kinds[kind] = Kind(title, time_limit_s, budget_s if budget_s is not None else time_limit_s)
        self._handlers[kind] = handler
        self._limits[kind] = float(time_limit_s)

    def _run(self, job_id: str) -> str:
        # Inline (tests), the message's own job runs, so a request finds it done; a worker runs the
        # waiting job that is due next, whichever job the message names.
        return self.runner.run(job_id) if self.huey.immediate else self.runner.run_next()

    def enqueue(self, job_id: str) -> None:
        """Hand the job to a worker (call after the job row is committed).

        If the broker is unreachable the job waits in its row: workers send it again once they
        reach the broker, so the request that queued it need not fail.
        """
        if self.huey.immediate:
            self._task(job_id)
            return
        try:
            self._task(job_id)
        except Exception as e:    # redis or sqlite3 errors, whichever broker this is
            log.warning("could not queue job %s (%s: %s); a worker sends it once the queue is reachable",
                        job_id, type(e).__name__, e)

    def pending_ids(self) -> list[str]:
        """The job ids of the messages waiting in the broker."""
        return [task.args[0] for task in self.huey.pending() if task.args]


def _make_huey(cfg: dict[str, Any]) -> Huey:
    name = cfg.get("QUEUE_NAME", "hourtab")
    if cfg.get("QUEUE_IMMEDIATE", cfg.get("TESTING", False)):
        return Huey(name, immediate=True, results=False)
    if cfg.get("REDIS_URL"):
        return RedisHuey(name, url=cfg["REDIS_URL"], results=False)
    return SqliteHuey(name, filename=str(Path(cfg["DATA_DIR"]) / "queue.db"), results=False)


def start(session: Session, account_id: int, kind: str, params: dict[str, Any]) -> Job:
    """Create the job row and commit it, from a request or a command (the queue may run it at once,
    from another process). Inside a job, use ``create_job``: the runner queues it after its commit."""
    with transaction(session):
        job = create_job(session, account_id, kind, params)
    return job
