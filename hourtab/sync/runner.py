"""One sync of one connection, as a job (``sync_run``): read the tracker, then write, then record.

It runs inside :class:`hourtab.core.jobrunner.JobRunner`, and its durable steps are the runner's
fenced commit, so an attempt that lost its job (its lease ran out and another attempt claimed it,
or its time limit was reached) keeps none of its writes. Reading a tracker takes seconds to
minutes and must hold no transaction: the claim of the connection (one sync at a time, fenced by
the job's lease) and the plan are made durable with :func:`~hourtab.core.jobrunner.checkpoint`
before the fetch; the merge and the record of the outcome commit with the job's "done". A failure
is recorded and checkpointed before the handler reports it, since the runner rolls back what a
failing job wrote. A refused token pauses the connection; a rate limit moves its next sync to when
the tracker allows (the worker never sleeps on it); other failures keep it on schedule and say why.

Every sync spends a :class:`~hourtab.sync.limits.Budget` (requests, bytes, seconds): one out of budget
saves nothing (a half-read window would look like deletions), keeps its cursor and continues at its
next turn. Between requests it looks (twice a second at most, on its own short database connection)
whether its connection was removed or paused, and then stops; and it writes nothing when the
connection it reloads to write is paused or gone.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from hourtab.core import progress
from hourtab.core.db import utcnow
from hourtab.core.jobrunner import checkpoint
from hourtab.core.jobs import Job
from hourtab.sync import service
from hourtab.sync.clients import FetchPlan, open_api, tracker
from hourtab.sync.errors import (
    InvalidConnection,
    OutOfBudget,
    RateLimited,
    SyncError,
    SyncStopped,
    TokenUnreadable,
    TrackerRefused,
)
from hourtab.sync.limits import Budget, Limits, current
from hourtab.sync.merge import apply_fetched
from hourtab.sync.models import Connection
from hourtab.sync.token_box import TokenBox, scrub

log = logging.getLogger(__name__)

#: Minutes between syncs of a connection unless the settings say otherwise (``HOURTAB_SYNC_MINUTES``).
DEFAULT_MINUTES = 15.0
#: Seconds the cursor is set back, so an entry edited while the last sync read is read again.
OVERLAP_S = 60


@dataclass
class Options:
    """What the caller decides about a sync: the schedule, its limits, and how waiting is done."""

    minutes: float = DEFAULT_MINUTES
    limits: Limits | None = None
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], dt.datetime] = utcnow


@dataclass
class Outcome:
    connection_id: int
    tracker: str
    #: done, refused (token refused: paused), rate_limited, out_of_budget, failed, busy (another sync runs),
    #: inactive, gone, stopped (paused or removed while it read)
    status: str
    counts: dict[str, int] = field(default_factory=dict)
    error: str = ""
    full: bool = False
    window: list[str] = field(default_factory=list)
    requests: int = 0
    warnings: list[str] = field(default_factory=list)
    revised_periods: list[dict[str, Any]] = field(default_factory=list)
    #: The token was refused just now (the connection was active until this sync).
    paused_now: bool = False
    #: Entries the tracker listed that could not be read: [{"id", "reason"}] (skipped, the rest synced).
    unreadable: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.connection_id, "tracker": self.tracker, "status": self.status, **self.counts,
                "error": self.error, "full": self.full, "window": self.window, "requests": self.requests,
                "warnings": self.warnings, "revised_periods": self.revised_periods, "unreadable": self.unreadable}


def sync_job(session: Session, job: Job, box: TokenBox, options: Options | None = None) -> Outcome:
    """Run the ``sync_run`` job ``job`` (``params["connection_id"]``) to its outcome, inside the job runner.

    The lock is never released on the way out by force: a lock whose job is no longer running with
    a live lease is free (``service.claim``), so a sync stopped by its time limit, or whose worker
    died, leaves the connection syncable again, and a superseded attempt cannot write at all.
    """
    options = options or Options()
    connection_id = int(job.params["connection_id"])
    connection = session.get(Connection, connection_id)
    if connection is None or connection.account_id != job.account_id:
        return Outcome(connection_id, "", "gone", error="The connection was removed.")
    if connection.status != "active":
        return Outcome(connection_id, connection.tracker, "inactive", error=connection.pause_reason)
    started = options.now()
    if not service.claim(session, connection_id, job.id, started):
        return Outcome(connection_id, connection.tracker, "busy",
                       error="Another sync of this connection is running; this one was not needed.")
    plan = service.plan_for(session, connection, started)
    # The claim holds for other syncs now, and no transaction stays open while fetching.
    checkpoint(session, phase=f"Reading {tracker(connection.tracker).label}")
    return _sync(session, connection, job.id, plan, started, box, options)


def _sync(session: Session, connection: Connection, job_id: str, plan: FetchPlan, started: dt.datetime,
          box: TokenBox, options: Options) -> Outcome:
    connection_id = connection.id
    chosen = tracker(connection.tracker)
    outcome = Outcome(connection_id, connection.tracker, "done", full=plan.full,
                      window=[plan.first_day.isoformat(), plan.last_day.isoformat()])
    token = ""
    limits = current(options.limits)
    try:
        token = box.open(connection.token_sealed)
        budget = Budget(limits, stopped=_stopped(session, connection_id))
        api = open_api(chosen, service.base_url(connection), token, connection.workspace, limits, budget)
        api.sleep = options.sleep
        try:
            fetched = chosen.fetch(api, plan)
        finally:
            api.close()
        outcome.requests = fetched.requests
        progress.report(f"Saving {len(fetched.entries)} entries", 1, 2)
        with progress.quiet():   # the write transaction lasts until the runner commits it with "done"
            reloaded = _reload(session, connection_id)
            if reloaded is None:      # removed while the tracker answered: nothing to write
                return Outcome(connection_id, outcome.tracker, "gone", error="The connection was removed.")
            if reloaded.status != "active":
                raise SyncStopped("The connection was paused while the tracker answered; its sync stopped and "
                                  "saved nothing.")
            result = apply_fetched(session, reloaded, chosen, fetched, options.now())
            _succeeded(reloaded, plan.full, started, result.as_json(), options, fetched.names)
            service.release_connection(session, connection_id, job_id)
            session.flush()
        outcome.counts, outcome.warnings = result.counts(), result.warnings
        outcome.revised_periods, outcome.unreadable = result.revised_periods, result.unreadable
        return outcome
    except (TrackerRefused, TokenUnreadable) as e:
        return _failed(session, job_id, outcome, scrub(str(e), token), options, pause=True)
    except RateLimited as e:
        return _failed(session, job_id, outcome, scrub(str(e), token), options, retry_after=e.retry_after)
    except SyncStopped as e:
        return _failed(session, job_id, outcome, str(e), options, stopped=True)
    except OutOfBudget as e:
        return _failed(session, job_id, outcome, str(e), options, out_of_budget=True)
    except (SyncError, InvalidConnection) as e:
        return _failed(session, job_id, outcome, scrub(str(e), token), options)
    except Exception:
        log.error("sync of connection %s failed:\n%s", connection_id, scrub(traceback.format_exc(), token))
        return _failed(session, job_id, outcome, "The sync failed unexpectedly; it will be tried again. "
                       f"If this persists, report connection {connection_id}.", options)


def _stopped(session: Session, connection_id: int) -> Callable[[], bool]:
    """Whether the connection was removed or paused since the sync began: asked on a connection of its own,
    so the job's session keeps no transaction open while the tracker answers."""
    bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine

    def stopped() -> bool:
        with engine.connect() as db:
            status = db.execute(select(Connection.status).where(Connection.id == connection_id)).scalar()
        return status != "active"

    return stopped


def _reload(session: Session, connection_id: int) -> Connection | None:
    """The connection as stored now (paused or removed by its consultant while the tracker answered)."""
    return session.get(Connection, connection_id, populate_existing=True)


def _succeeded(connection: Connection, full: bool, started: dt.datetime, result: dict[str, Any],
               options: Options, names: dict | None) -> None:
    cursor = {**connection.cursor, "since": (started - dt.timedelta(seconds=OVERLAP_S)).isoformat()}
    if names is not None:
        cursor["names"] = names
    if full:
        cursor["full_at"] = started.isoformat()
    now = options.now()
    connection.cursor = cursor
    connection.last_sync_at = connection.last_success_at = connection.updated_at = now
    connection.last_result, connection.last_error, connection.failures = result, "", 0
    if connection.status == "active":
        connection.next_sync_at = service.next_sync(now, options.minutes)


def _failed(session: Session, job_id: str, outcome: Outcome, message: str, options: Options, *,
            pause: bool = False, retry_after: int | None = None, stopped: bool = False,
            out_of_budget: bool = False) -> Outcome:
    session.rollback()
    now = options.now()
    connection_id = outcome.connection_id
    connection = _reload(session, connection_id)
    if connection is None:
        return Outcome(connection_id, outcome.tracker, "gone", error="The connection was removed.")
    service.release_connection(session, connection_id, job_id)
    if stopped:   # paused while it read: nothing to record but that it stopped
        checkpoint(session)
        return Outcome(connection_id, outcome.tracker, "stopped", error=message)
    connection.last_sync_at = connection.updated_at = now
    connection.last_error, connection.failures = message, connection.failures + 1
    if pause:
        outcome.paused_now = connection.status == "active"
        connection.status, connection.pause_reason, connection.next_sync_at = "paused", message, None
        outcome.status = "refused"
    elif retry_after is not None:
        connection.next_sync_at = now + dt.timedelta(seconds=retry_after)
        outcome.status = "rate_limited"
    elif out_of_budget:   # its next turn, as if it had succeeded: the cursor did not move
        connection.next_sync_at = service.next_sync(now, options.minutes)
        outcome.status = "out_of_budget"
    else:
        # A tracker that keeps failing is asked less often (up to 4 intervals), never given up on.
        connection.next_sync_at = service.next_sync(now, options.minutes * min(connection.failures, 4))
        outcome.status = "failed"
    # Kept although the handler then fails the job (which rolls back), and before the consultant is
    # e-mailed; fenced like every commit of a job.
    checkpoint(session)
    outcome.error = message
    return outcome
