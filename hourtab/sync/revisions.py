"""Closed periods a sync changed: recorded as the ledger's revisions, listed in the sync's result.

A sync that removes, changes or adds an entry dated in a period that already closed revises that
period's used hours. The sync wraps its writes and their routing in :func:`watch_sync_writes`, which
opens the one watch of the hours domain, ``hourtab.retainers.revisions.watch_closed_periods`` (the
one CSV imports, removals and rule edits use): every closed period the writes change gets a revision row, so the page says
"revised on DATE (was X h)", the JSON, the statement and the feed carry it. This module only says
from which day the writes can reach and lists what that watch recorded, for the sync's result.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.orm import Session

from hourtab.retainers import revisions

#: ``period_revisions.reason`` of a sync's revisions.
REASON = "sync"


@dataclass(frozen=True)
class RevisedPeriod:
    retainer_id: int
    period_start: dt.date
    was_s: int
    now_s: int

    def as_json(self) -> dict:
        return {"retainer_id": self.retainer_id, "period_start": self.period_start.isoformat(),
                "was_s": self.was_s, "now_s": self.now_s}


@contextmanager
def watch_sync_writes(session: Session, account_id: int, days: Iterable[dt.date], now: dt.datetime,
                         upload_id: int | None = None) -> Iterator[list[RevisedPeriod]]:
    """Around a sync's writes and routing: yields the list the revised closed periods are appended to.

    ``days``: the local dates of the entries the writes add, change (before and after) or remove;
    none means nothing is written, so nothing is watched.
    """
    days = list(days)
    revised: list[RevisedPeriod] = []
    if not days:
        yield revised
        return
    # A day of margin, as for an import: a tracker's local date can be a day off the retainer's.
    since = min(days) - dt.timedelta(days=1)
    with revisions.watch_closed_periods(session, account_id, REASON, since=since, now=now,
                                        upload_id=upload_id) as watched:
        yield revised
    revised += [RevisedPeriod(r.retainer_id, r.period_start, r.was[0], r.now[0])
                for r in sorted(watched.recorded, key=lambda r: (r.retainer_id, r.period_start))]
