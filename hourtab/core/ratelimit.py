"""A sliding-window rate limiter stored in the database.

Stored in the database rather than in process memory so that every gunicorn worker sees the same
counts, on SQLite and PostgreSQL alike, with nothing else to run.
"""

from __future__ import annotations

import datetime as dt
import math

from sqlalchemy import Index, Integer, String, delete, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.errors import LimitReached


class RateEvent(Base):
    __tablename__ = "rate_events"
    __table_args__ = (Index("ix_rate_events_bucket_key_at", "bucket", "key", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bucket: Mapped[str] = mapped_column(String(40), nullable=False)
    key: Mapped[str] = mapped_column(String(320), nullable=False)
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False)


def check(session: Session, bucket: str, keys: list[str], limit: int, window_s: int,
          now: dt.datetime | None = None) -> None:
    """Raise ``LimitReached`` (with ``retry_after``) when any key already has ``limit`` events."""
    now = now or utcnow()
    since = now - dt.timedelta(seconds=window_s)
    for key in keys:
        count, oldest = session.execute(
            select(func.count(RateEvent.id), func.min(RateEvent.at)).where(
                RateEvent.bucket == bucket, RateEvent.key == key, RateEvent.at > since)
        ).one()
        if count >= limit:
            oldest = oldest if oldest.tzinfo else oldest.replace(tzinfo=dt.UTC)
            retry = max(1, math.ceil((oldest + dt.timedelta(seconds=window_s) - now).total_seconds()))
            raise LimitReached(f"Too many attempts. Try again in {retry} s.", retry_after=retry)


def record(session: Session, bucket: str, keys: list[str], window_s: int,
           now: dt.datetime | None = None) -> None:
    """Record one event per key and prune this bucket's events older than the window."""
    now = now or utcnow()
    session.execute(delete(RateEvent).where(
        RateEvent.bucket == bucket, RateEvent.at <= now - dt.timedelta(seconds=window_s)))
    session.add_all(RateEvent(bucket=bucket, key=key, at=now) for key in keys)


def take(session: Session, bucket: str, keys: list[str], window_s: int,
         now: dt.datetime | None = None) -> list[int]:
    """Record an attempt on every key *before* deciding whether it may go ahead; returns the event ids.

    Checking first and recording afterwards lets simultaneous requests all pass the check before
    any of them is recorded. Recorded first and committed, each attempt is visible to every later
    ``admit``; the last of any group of admitted attempts to count sees all of them, so no more
    than ``limit`` are ever admitted, on SQLite and PostgreSQL alike. The caller commits, then
    calls ``admit``.
    """
    now = now or utcnow()
    session.execute(delete(RateEvent).where(
        RateEvent.bucket == bucket, RateEvent.at <= now - dt.timedelta(seconds=window_s)))
    events = [RateEvent(bucket=bucket, key=key, at=now) for key in keys]
    session.add_all(events)
    session.flush()
    return [e.id for e in events]


def admit(session: Session, bucket: str, keys: list[str], limit: int, window_s: int,
          now: dt.datetime | None = None) -> None:
    """Raise ``LimitReached`` when, counting the attempt just taken, a key has more than ``limit``."""
    check(session, bucket, keys, limit + 1, window_s, now)


def release(session: Session, event_ids: list[int]) -> None:
    """Forget attempts that turned out not to count (refused before evaluation, or successful)."""
    session.execute(delete(RateEvent).where(RateEvent.id.in_(event_ids)))


def reset(session: Session, bucket: str, keys: list[str]) -> None:
    session.execute(delete(RateEvent).where(RateEvent.bucket == bucket, RateEvent.key.in_(keys)))
