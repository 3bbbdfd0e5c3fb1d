"""Sync runs in tests: the retainer's far-from-UTC zone, its months, a retainer, a run through the job runner."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from sqlalchemy import select

from hourtab.core.db import make_sessionmaker, transaction
from hourtab.core.jobrunner import JobRunner
from hourtab.core.jobs import Job, create_job
from hourtab.retainers import ledger_reads
from hourtab.retainers import service as retainers
from hourtab.sync import runner
from hourtab.sync.models import Connection
from hourtab.sync.token_box import TokenBox

#: The retainer's zone: far from UTC, so a period boundary in the zone is not one in UTC.
ZONE = ZoneInfo("America/New_York")
TOKEN = "tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def months() -> tuple[dt.date, dt.date]:
    """First days of the previous (closed) and the current (open) month, in the retainer's zone."""
    today = dt.datetime.now(ZONE).date()
    current = today.replace(day=1)
    return (current - dt.timedelta(days=1)).replace(day=1), current


def at(day: dt.date, hour: int, minute: int = 0) -> dt.datetime:
    """A wall-clock time in the retainer's zone, as an aware instant."""
    return dt.datetime.combine(day, dt.time(hour, minute), tzinfo=ZONE)


def make_retainer(session, account, client: str):
    previous, _ = months()
    with transaction(session):
        return retainers.create_retainer(session, account, f"{client} retainer", client, retainers.parse_terms(
            retainers.TermsInput(hours="200", start=previous.isoformat(), timezone=ZONE.key)))


def ledger_by_period(session, retainer) -> dict[dt.date, int]:
    """Used seconds per period, as the ledger counts them (page, CSV and statements read the same)."""
    session.expire_all()
    ledger = ledger_reads.retainer_ledger(session, retainer)
    return {p.period.start: p.used_s for p in ledger.periods if p.used_s}


def by_month(items) -> dict[dt.date, int]:
    """(local day, seconds) pairs summed per calendar month: what a monthly retainer must show."""
    out: dict[dt.date, int] = {}
    for day, seconds in items:
        key = day.replace(day=1)
        out[key] = out.get(key, 0) + seconds
    return out


def run_sync(session, connection_id: int, box: TokenBox, **options) -> dict:
    """One ``sync_run`` job through the real job runner; its result (the sync's outcome)."""
    sessions = make_sessionmaker(session.get_bind())
    connection = session.get(Connection, connection_id)
    with transaction(session):
        job = create_job(session, connection.account_id, "sync_run", {"connection_id": connection_id})
    handler = {"sync_run": lambda s, j: runner.sync_job(s, j, box, runner.Options(**options)).as_json()}
    JobRunner(sessions, handler, worker="test").run(job.id)
    session.expire_all()
    done = session.scalar(select(Job).where(Job.id == job.id))
    assert done.status == "done", done.error
    return done.result
