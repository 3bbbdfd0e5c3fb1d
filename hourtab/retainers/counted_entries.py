"""A retainer's counted entries as DataFrames, read straight from the database.

``entries_on_days`` reads the periods a reader lists (``totals.with_entries``); ``entries_frame``
reads them all, for the tests' from-scratch ledger and the benchmarks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pandas as pd
from sqlalchemy import String, cast, select
from sqlalchemy.orm import Session

from hourtab.core.db import columns
from hourtab.retainers.models import retainer_entries
from hourtab.timesheets.models import TimeEntry

#: The ledger's columns, then what the client reads of each entry (``user_name``: who did it, where
#: the export names people).
ENTRY_FRAME_COLUMNS = ["entry_id", "start_at", "local_date", "duration_s", "description", "project", "task",
                       "user_name"]


def entries_frame(session: Session, retainer_id: int, text: bool = True) -> pd.DataFrame:
    """The retainer's counted entries as a frame, in ``ENTRY_FRAME_COLUMNS`` order.

    Times and dates are read as text and parsed a column at a time: turning 20,000 of them into
    Python objects one by one (and pandas then reading those) took most of a cold page render.
    ``text=False`` leaves out description, project, task and person: the ledger needs none of them.
    """
    te = TimeEntry
    names = ENTRY_FRAME_COLUMNS if text else ENTRY_FRAME_COLUMNS[:4]
    as_text = {"start_at", "local_date"}
    stmt = (select(*(cast(getattr(te, n), String) if n in as_text else getattr(te, "id" if n == "entry_id" else n)
                     for n in names))
            .join(retainer_entries, retainer_entries.c.entry_id == te.id)
            .where(retainer_entries.c.retainer_id == retainer_id, te.status != "removed"))
    return _typed(pd.DataFrame(columns(session, stmt, names)))


def entries_on_days(session: Session, retainer_id: int, spans: Sequence[tuple[dt.date, dt.date | None]],
                    text: bool = True) -> pd.DataFrame:
    """The retainer's counted entries whose stored local ``day`` is in one of ``spans`` (first day,
    end day exclusive or ``None``), with that ``day`` as a column: one ranged read of the
    ``(retainer_id, day)`` index a span, so a period's entries cost that period, not the history."""
    te, held = TimeEntry, retainer_entries
    names = [*(ENTRY_FRAME_COLUMNS if text else ENTRY_FRAME_COLUMNS[:4]), "day"]
    as_text = {"start_at", "local_date"}
    base = (select(*(cast(getattr(te, n), String) if n in as_text else getattr(te, "id" if n == "entry_id" else n)
                     for n in names[:-1]), cast(held.c.day, String))
            .join(held, held.c.entry_id == te.id)
            .where(held.c.retainer_id == retainer_id, te.status != "removed"))
    frames = []
    for first, end in spans:
        stmt = base.where(held.c.day >= first) if end is None else base.where(held.c.day >= first, held.c.day < end)
        frames.append(pd.DataFrame(columns(session, stmt, names)))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({n: () for n in names})
    return _typed(frame).assign(day=pd.to_datetime(frame["day"].astype("str"), format="%Y-%m-%d")
                                .astype("datetime64[ns]"))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype({"entry_id": "int64", "duration_s": "int64"}).assign(
        # SQLite stores naive UTC text, PostgreSQL writes an offset: ISO8601 with utc=True reads both.
        start_at=pd.to_datetime(frame["start_at"].astype("str"), utc=True, format="ISO8601"),
        local_date=pd.to_datetime(frame["local_date"].astype("str"), format="%Y-%m-%d").astype("datetime64[us]"))
