"""Closed periods a sync changed: recorded as the ledger's revisions, listed in the sync's result.

A sync that removes, changes or adds an entry dated in a period that already closed revises that
period's used hours. The sync wraps its writes and their routing in :func:`watch_closed_periods`,
which is the retainers' own ``hourtab.retainers.revisions.watch_closed_periods`` (the one CSV imports
and removals use): every closed period the writes change gets a revision row, so the page says
"revised on DATE (was X h)", the JSON, the statement and the feed carry it. This module only says
from which day the writes can reach and reads back what was recorded, for the sync's result.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hourtab.retainers import revisions
from hourtab.retainers.models import PeriodRevision as RevisionRow

#: ``period_revisions.reason`` of a sync's revisions.
REASON = "sync"


@dataclass(frozen=True)
class PeriodRevision:
    retainer_id: int
    period_start: dt.date
    was_s: int
    now_s: int

    def as_json(self) -> dict:
        return {"retainer_id": self.retainer_id, "period_start": self.period_start.isoformat(),
                "was_s": self.was_s, "now_s": self.now_s}


def _last_id(session: Session, account_id: int) -> int:
    return session.scalar(select(func.max(RevisionRow.id)).where(RevisionRow.account_id == account_id)) or 0


def _recorded(session: Session, account_id: int, retainer_ids: list[int], after_id: int,
              upload_id: int | None) -> list[PeriodRevision]:
    """The revisions this watch recorded (the connection's upload tells them from other writers')."""
    if not retainer_ids:
        return []
    r = RevisionRow
    upload = r.upload_id.is_(None) if upload_id is None else r.upload_id == upload_id
    rows = session.execute(select(r.retainer_id, r.period_start, r.was_used_s, r.used_s)
                           .where(r.account_id == account_id, r.retainer_id.in_(retainer_ids), r.id > after_id,
                                  r.reason == REASON, upload)
                           .order_by(r.retainer_id, r.period_start, r.number))
    return [PeriodRevision(rid, start, was, now) for rid, start, was, now in rows]


@contextmanager
def watch_closed_periods(session: Session, account_id: int, days: Iterable[dt.date], now: dt.datetime,
                         upload_id: int | None = None) -> Iterator[list[PeriodRevision]]:
    """Around a sync's writes and routing: yields the list the revised closed periods are appended to.

    ``days``: the local dates of the entries the writes add, change (before and after) or remove;
    none means nothing is written, so nothing is watched.
    """
    days = list(days)
    revised: list[PeriodRevision] = []
    if not days:
        yield revised
        return
    # A day of margin, as for an import: a tracker's local date can be a day off the retainer's.
    since = min(days) - dt.timedelta(days=1)
    after_id = _last_id(session, account_id)
    with revisions.watch_closed_periods(session, account_id, REASON, since=since, now=now,
                                        upload_id=upload_id) as retainer_ids:
        yield revised
    revised += _recorded(session, account_id, retainer_ids, after_id, upload_id)
