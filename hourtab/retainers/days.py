"""The local day each counted entry falls on in its retainer's zone, stored beside the assignment.

A ledger sums entries by period, and periods are local dates in the retainer's zone. Keeping that
day on ``retainer_entries`` (set when an entry is routed, refreshed when an entry's times change or
the retainer's zone does) lets ``totals`` read a ledger's sums with one ``GROUP BY`` over an index,
never the entries themselves. The day is the one the tests' from-scratch ledger
(``tests.helpers.ledger_oracle``) computes (its start in the zone; the tracker's date for an entry
without a time).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import pandas as pd
from sqlalchemy import String, bindparam, cast, select, update
from sqlalchemy.orm import Session

from hourtab.core.db import columns
from hourtab.retainers.models import Retainer, retainer_entries
from hourtab.timesheets.models import TimeEntry

#: Ids per ``IN (...)`` list: well under every backend's parameter limit.
CHUNK = 500


def local_days(start_at: Iterable, local_date: Iterable, timezone: str) -> list[dt.date]:
    """Each entry's day in ``timezone``: its start there, or its own date where it has no time."""
    start = pd.to_datetime(pd.Series([None if s is None else str(s) for s in start_at], dtype="object"),
                           utc=True, format="ISO8601")
    day = start.dt.tz_convert(timezone).dt.date
    # Dates come as dates, text or midnight timestamps: their first ten characters are the day.
    fallback = pd.to_datetime(pd.Series([str(d)[:10] for d in local_date], dtype="object"), format="%Y-%m-%d").dt.date
    return [f if pd.isna(d) else d for d, f in zip(day.tolist(), fallback.tolist(), strict=True)]


def _times(session: Session, entry_ids: list[int]) -> pd.DataFrame:
    te = TimeEntry
    names = ["id", "start_at", "local_date"]
    frames = [pd.DataFrame(columns(session, select(te.id, cast(te.start_at, String), cast(te.local_date, String))
                                   .where(te.id.in_(entry_ids[k:k + CHUNK])), names))
              for k in range(0, len(entry_ids), CHUNK)]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({n: () for n in names})


def routed_rows(session: Session, entry_ids: list[int], targets: list[int]) -> list[tuple[int, int, str]]:
    """``(entry_id, retainer_id, day)`` rows for entries going to ``targets``."""
    if not entry_ids:
        return []
    times = _times(session, entry_ids).set_index("id")
    zones = dict(session.execute(select(Retainer.id, Retainer.timezone).where(Retainer.id.in_(set(targets)))).all())
    rows = []
    for zone in set(zones.values()):  # one zone for all an account's retainers, as a rule: one pass
        mine = [(i, t) for i, t in zip(entry_ids, targets, strict=True) if zones[t] == zone]
        part = times.loc[[i for i, _ in mine]]
        days = local_days(part["start_at"], part["local_date"], zone)
        rows += [(i, rid, d.isoformat()) for (i, rid), d in zip(mine, days, strict=True)]
    return rows


def refresh_days(session: Session, entry_ids: Iterable[int]) -> None:
    """Set the stored day of these entries again (their times may have changed); O(entries given)."""
    ids = sorted({int(i) for i in entry_ids})
    held: list[tuple[int, int]] = []
    for k in range(0, len(ids), CHUNK):
        held += [(int(e), int(r)) for e, r in session.execute(
            select(retainer_entries.c.entry_id, retainer_entries.c.retainer_id)
            .where(retainer_entries.c.entry_id.in_(ids[k:k + CHUNK])))]
    _write_days(session, routed_rows(session, [e for e, _ in held], [r for _, r in held]))


def rezone(session: Session, retainer_id: int) -> None:
    """Every stored day of the retainer again, after its time zone changed."""
    ids = [int(i) for i in session.scalars(select(retainer_entries.c.entry_id)
                                           .where(retainer_entries.c.retainer_id == retainer_id))]
    _write_days(session, routed_rows(session, ids, [retainer_id] * len(ids)))


def _write_days(session: Session, rows: list[tuple[int, int, str]]) -> None:
    if rows:
        session.execute(update(retainer_entries).where(retainer_entries.c.entry_id == bindparam("eid"))
                        .values(day=bindparam("new_day")),
                        [{"eid": e, "new_day": dt.date.fromisoformat(d)} for e, _, d in rows])
