"""A retainer's counted entries as DataFrames, read straight from the database.

Below the service and the revision records, which both build on these reads.
"""

from __future__ import annotations

import datetime as dt
import typing
from collections.abc import Iterable, Sequence

import pandas as pd
from sqlalchemy import String, cast, select
from sqlalchemy.orm import Session

from hourtab.core.db import columns
from hourtab.retainers.models import retainer_entries
from hourtab.timesheets.models import TimeEntry

ENTRY_FRAME_COLUMNS = ["entry_id", "start_at", "local_date", "duration_s", "description", "project", "task",
                       "user_name"]
#: What the client reads of each entry; ``user_name`` is who did it, where the export names people.
TEXT_COLUMNS = ("description", "project", "task", "user_name")
#: Ids per ``IN (...)`` list when reading entry text: well under every backend's parameter limit.
TEXT_CHUNK = 500


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


def no_entries() -> pd.DataFrame:
    """An empty ``entries_frame(text=False)``, typed as a read one is."""
    return _typed(pd.DataFrame({n: () for n in ENTRY_FRAME_COLUMNS[:4]}))


def held_frames(session: Session, account_id: int) -> dict[int, pd.DataFrame]:
    """``entries_frame(text=False)`` of every retainer of the account that counts entries, in one read."""
    te = TimeEntry
    names = ["retainer_id", *ENTRY_FRAME_COLUMNS[:4]]
    stmt = (select(retainer_entries.c.retainer_id, te.id, cast(te.start_at, String), cast(te.local_date, String),
                   te.duration_s)
            .join(retainer_entries, retainer_entries.c.entry_id == te.id)
            .where(te.account_id == account_id, te.status != "removed"))
    frame = pd.DataFrame(columns(session, stmt, names))
    if not len(frame):
        return {}
    frame = _typed(frame).sort_values("entry_id", kind="stable")
    return {int(typing.cast(int, rid)): part.drop(columns="retainer_id").reset_index(drop=True)
            for rid, part in frame.groupby("retainer_id", sort=True)}


def entry_text(session: Session, entry_ids: Iterable[int]) -> pd.DataFrame:
    """Description, project, task and person of the given entries, indexed by ``entry_id``."""
    te = TimeEntry
    ids = [int(i) for i in entry_ids]
    names = ["entry_id", *TEXT_COLUMNS]
    chunks = [pd.DataFrame(columns(session, select(te.id, *(getattr(te, c) for c in TEXT_COLUMNS))
                                   .where(te.id.in_(ids[k:k + TEXT_CHUNK])), names))
              for k in range(0, len(ids), TEXT_CHUNK)]
    frame = pd.concat(chunks) if chunks else pd.DataFrame(columns=names)
    return frame.astype({"entry_id": "int64"}).set_index("entry_id")
