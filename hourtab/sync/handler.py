"""The ``sync_run`` job's handler, made from the settings and the token box alone.

The worker's app registers it on its queue (``app.jobs.sync``); ``hourtab sync run`` runs it in a job
runner of its own, so neither the app nor the other job kinds' packages are built or imported for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from hourtab.core.jobs import Handler, Job, create_job
from hourtab.sync import notices, runner
from hourtab.sync.errors import SyncFailed
from hourtab.sync.limits import Limits
from hourtab.sync.token_box import TokenBox


def options(settings: Mapping[str, Any]) -> runner.Options:
    """The schedule and limits of a sync, as the settings say (``app.config``, or ``hourtab sync run``'s)."""
    return runner.Options(minutes=float(settings.get("SYNC_MINUTES", runner.DEFAULT_MINUTES)),
                          limits=Limits.from_settings(settings))


#: Seconds a sync may take past its reading budget to write what it read (a year of entries, on a busy database).
WRITE_ALLOWANCE_S = 30


def time_limits(limits: Limits) -> tuple[float, float]:
    """(budget, hard limit) of a ``sync_run`` job: past its budget ``/healthz`` shows the consumer busy;
    at the hard limit the job is failed and its thread stopped."""
    budget = limits.sync_s + limits.request_s + WRITE_ALLOWANCE_S
    return budget, 2 * budget


def sync_handler(settings: Mapping[str, Any], box: TokenBox) -> Handler:
    """The ``sync_run`` handler: ``handler(session, job) -> result``, as a job runner calls it."""
    return lambda session, job: run_sync(settings, box, session, job)


def run_sync(settings: Mapping[str, Any], box: TokenBox, session: Session, job: Job) -> dict[str, Any]:
    """One sync; a refused token also tells the consultant by e-mail."""
    outcome = runner.sync_job(session, job, box, options(settings))
    if outcome.paused_now:
        notices.tell_paused(session, job.account_id, outcome, smtp_url=settings.get("SMTP_URL"),
                            public_url=settings["PUBLIC_URL"], sender=settings["MAIL_FROM"])
    if outcome.status in ("refused", "failed", "out_of_budget"):
        raise SyncFailed(outcome.error, outcome.as_json())
    if any(outcome.counts.get(k) for k in ("new", "changed", "removed")):
        if settings.get("SMTP_URL"):   # committed with this job's result; the runner hands it to the queue
            create_job(session, job.account_id, "alerts_check", {})
    return outcome.as_json()
