"""Rows of a tracker's CSV export that the tracker's live sync already brought: recognised, not added again.

A consultant who connected a tracker may still import its CSV export (habit, or a colleague's advice).
Its rows are the same work as entries the sync stored (``source_format`` ``<format>-api``): the same
user, description and duration (within the export's rounding), and the same start: as an instant, or
as the wall clock the export shows (an export read in another zone than the tracker's has its instants
shifted; the sync's upload row names the tracker's zone), or, for exports without times (Harvest), the
same date. Such a row is *adopted*: the synced
entry stays the one that counts, with the API's figures, and the preview says how many rows were
recognised. The CSV exports carry no entry ids, so there are none to compare.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.timesheets.models import TimeEntry, Upload
from hourtab.timesheets.normalise import TOLERANCE_S

#: Statuses of synced entries a CSV row can be (a removed one counts for nothing).
_COUNTING = ("active", "missing_upstream")


def _norm(value: object) -> str:
    return " ".join(str(value or "").split()).casefold()


@dataclass
class _Synced:
    entry_id: int
    start: dt.datetime | None
    wall: dt.datetime | None
    day: dt.date
    duration_s: int


def _close(a: dt.datetime | None, b: dt.datetime | None) -> bool:
    return a is not None and b is not None and abs((a - b).total_seconds()) <= TOLERANCE_S


def _synced(session: Session, account_id: int, source_format: str, first: dt.date, last: dt.date
            ) -> dict[tuple[str, str], list[_Synced]]:
    te = TimeEntry
    rows = session.execute(select(te.id, te.start_at, te.timezone, Upload.options, te.local_date, te.duration_s,
                                  te.user_name, te.description)
                           .outerjoin(Upload, Upload.id == te.upload_id)
                           .where(te.account_id == account_id, te.source_format == f"{source_format}-api",
                                  te.status.in_(_COUNTING), te.local_date.between(first, last))
                           .order_by(te.local_date, te.start_at, te.id))
    found: dict[tuple[str, str], list[_Synced]] = defaultdict(list)
    for entry_id, start, zone, options, day, seconds, user, description in rows:
        zone = (options or {}).get("timezone") or zone     # the tracker's zone: its exports' wall clock
        wall = start.astimezone(ZoneInfo(zone)).replace(tzinfo=None) if start is not None else None
        found[(_norm(user), _norm(description))].append(_Synced(entry_id, start, wall, day, seconds))
    return found


def _same(entry: _Synced, start: dt.datetime | None, wall: dt.datetime | None, day: dt.date, seconds: int) -> bool:
    if abs(entry.duration_s - seconds) > TOLERANCE_S:
        return False
    if start is None or entry.start is None:
        return entry.day == day
    return _close(entry.start, start) or _close(entry.wall, wall)


def synced_twins(session: Session, account_id: int, source_format: str, frame: pd.DataFrame) -> np.ndarray:
    """For each row of ``frame`` (an export's new rows), the id of the synced entry it is, or -1."""
    twins = np.full(len(frame), -1, dtype=np.int64)
    if not len(frame) or not source_format:
        return twins
    first = frame["local_date"].min().date() - dt.timedelta(days=1)
    last = frame["local_date"].max().date() + dt.timedelta(days=1)
    pool = _synced(session, account_id, source_format, first, last)
    if not pool:
        return twins
    rows = zip(frame["user_name"], frame["description"], frame["start_at"], frame["timezone"], frame["local_date"],
               frame["duration_s"], strict=True)
    for i, (user, description, start, zone, day, seconds) in enumerate(rows):
        bucket = pool.get((_norm(user), _norm(description)))
        if not bucket:
            continue
        instant = None if pd.isna(start) else pd.Timestamp(start).to_pydatetime()
        wall = instant.astimezone(ZoneInfo(zone)).replace(tzinfo=None) if instant is not None and zone else None
        for j, entry in enumerate(bucket):
            if _same(entry, instant, wall, pd.Timestamp(day).date(), int(seconds)):
                twins[i] = bucket.pop(j).entry_id
                break
    return twins
