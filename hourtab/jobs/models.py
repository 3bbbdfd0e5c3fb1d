"""The ``jobs`` table: what the queue was asked to do, and how far it got.

The task queue carries only the job id; everything a page shows (phase, bytes done, error) and
everything a retry needs (parameters, attempt count, lease) lives here, in the shared database,
so any app host can show any worker's progress.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from hourtab.db import Base, UTCDateTime, utcnow
from hourtab.scoping import AccountOwned

STATUSES = ("queued", "running", "done", "failed")


class Job(AccountOwned, Base):
    __tablename__ = "jobs"

    #: Random hex: job URLs are also scoped to the account, this just keeps them unguessable.
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="queued", index=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    result: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    phase: Mapped[str] = mapped_column(String(100), nullable=False, default="")
    done: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    total: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    #: A message safe to show the consultant (never a traceback or a server path).
    error: Mapped[str] = mapped_column(Text, nullable=False, default="")
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    #: While running, the worker renews this; past it, the job is presumed dead and is queued again.
    lease_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    worker: Mapped[str] = mapped_column(String(100), nullable=False, default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)

    @property
    def percent(self) -> float | None:
        if self.status == "done":
            return 100.0
        return round(100.0 * self.done / self.total, 1) if self.total > 0 else None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "status": self.status, "phase": self.phase,
                "done": self.done, "total": self.total, "percent": self.percent, "error": self.error,
                "attempts": self.attempts}
