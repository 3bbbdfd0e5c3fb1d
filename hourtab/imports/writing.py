"""Writing a classified import into ``time_entries``: new rows inserted in bulk (a row another
import stored meanwhile is skipped), changed rows updated with their old values kept in
``time_entry_changes``, missing ones flagged. Never commits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from hourtab.core.db import insert_new_rows
from hourtab.imports.classify import COMPARED, ImportPlan
from hourtab.timesheets.canonical import iso_dates, sqlite_datetimes
from hourtab.timesheets.models import TimeEntry, time_entries, time_entry_changes


def _records(frame: pd.DataFrame, account_id: int, upload_id: int, now: dt.datetime) -> list[dict[str, Any]]:
    """Plain Python values for the driver: aware datetimes or None, dates, bools or None."""
    out = {
        "fingerprint": frame["fingerprint"].tolist(),
        "start_at": _records_times(frame["start_at"]),
        "end_at": _records_times(frame["end_at"]),
        "local_date": [d.date() for d in frame["local_date"]],
        "timezone": frame["timezone"].tolist(),
        "duration_s": frame["duration_s"].astype(int).tolist(),
        "client": frame["client"].tolist(),
        "project": frame["project"].tolist(),
        "task": frame["task"].tolist(),
        "description": frame["description"].tolist(),
        "tags": frame["tags"].tolist(),
        "billable": frame["billable"].astype("object").where(frame["billable"].notna(), None).tolist(),
        "user_name": frame["user_name"].tolist(),
        "source_format": frame["source_format"].tolist(),
        "source_line": frame["line"].astype(int).tolist(),
        "content_hash": frame["content_hash"].tolist(),
    }
    keys = list(out)
    fixed = {"account_id": account_id, "upload_id": upload_id, "status": "active", "updated_at": now}
    return [{**fixed, **dict(zip(keys, row, strict=True))} for row in zip(*out.values(), strict=True)]


def _records_times(values: pd.Series) -> list[Any]:
    py = values.dt.to_pydatetime()
    mask = values.isna().to_numpy()
    return [None if m else v for v, m in zip(py, mask, strict=True)]


INSERT_COLUMNS = ("account_id", "upload_id", "status", "updated_at", "fingerprint", "content_hash", "start_at",
                  "end_at", "local_date", "timezone", "duration_s", "client", "project", "task", "description",
                  "tags", "billable", "user_name", "source_format", "source_line")


def _driver_rows(frame: pd.DataFrame, account_id: int, upload_id: int, now: dt.datetime,
                 dialect: str) -> Iterator[tuple]:
    """New entries as driver-ready tuples in ``INSERT_COLUMNS`` order, converted a column at a time.

    Times are UTC text as SQLAlchemy stores them in SQLite (``YYYY-MM-DD HH:MM:SS.ffffff``), with
    ``+00`` on PostgreSQL so ``timestamptz`` reads them exactly; dates are ISO text. Converting per
    value (Python datetimes through each type's bind hook) costs seconds per 100,000 entries.
    """
    offset = "+00" if dialect == "postgresql" else ""

    def times(col: str) -> list:
        text = sqlite_datetimes(frame[col])
        return (pc.binary_join_element_wise(text, offset, "") if offset else text).to_pylist()

    n = len(frame)
    stamp = now.astimezone(dt.UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f") + offset
    values = {
        "account_id": repeat(account_id, n), "upload_id": repeat(upload_id, n), "status": repeat("active", n),
        "updated_at": repeat(stamp, n), "start_at": times("start_at"), "end_at": times("end_at"),
        "local_date": iso_dates(frame["local_date"]).to_pylist(),
        "duration_s": frame["duration_s"].astype(int).tolist(), "source_line": frame["line"].astype(int).tolist(),
        "billable": frame["billable"].astype("object").where(frame["billable"].notna(), None).tolist(),
    }
    return zip(*(values[c] if c in values else frame[c].tolist() for c in INSERT_COLUMNS), strict=True)


def _insert_new(session: Session, frame: pd.DataFrame, account_id: int, upload_id: int, now: dt.datetime) -> None:
    """Insert the new entries; a row another import stored meanwhile (same fingerprint) is skipped."""
    rows = _driver_rows(frame, account_id, upload_id, now, session.get_bind().dialect.name)
    insert_new_rows(session, time_entries, INSERT_COLUMNS, rows, conflict=("account_id", "fingerprint"),
                    order_by="source_line")


def _json_safe(value: Any) -> Any:
    if value is None or (not isinstance(value, str | bool) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp | dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value



def _old_values(session: Session, ids: list[int]) -> dict[int, dict[str, Any]]:
    """The full previous values of the (few) entries an import changes, for their history."""
    found: dict[int, dict[str, Any]] = {}
    for i in range(0, len(ids), 1000):
        for entry in session.scalars(select(TimeEntry).where(TimeEntry.id.in_(ids[i:i + 1000]))):
            found[entry.id] = {c: _json_safe(getattr(entry, c)) for c in (*COMPARED, "status")}
    return found



def write_plan(session: Session, account_id: int, upload_id: int, plan: ImportPlan, now: dt.datetime) -> int:
    """Insert, update and flag the entries as ``plan`` says; the number of rows actually inserted."""
    if len(plan.new):
        _insert_new(session, plan.new, account_id, upload_id, now)
    inserted = session.scalar(select(func.count(TimeEntry.id)).where(TimeEntry.upload_id == upload_id)) or 0
    changes: list[dict[str, Any]] = []
    if len(plan.changed_new):
        fresh = _records(plan.changed_new, account_id, upload_id, now)
        ids = [int(i) for i in plan.changed_old["id"]]
        previous = _old_values(session, ids)
        updates = []
        for row, entry_id in zip(fresh, ids, strict=True):
            old = previous[entry_id]
            changes.append({"account_id": account_id, "entry_id": entry_id, "upload_id": upload_id,
                            "kind": "changed" if old["status"] == "active" else "reappeared",
                            "old_values": old, "changed_at": now})
            updates.append({"id": entry_id, **{k: row[k] for k in (*COMPARED, "source_line", "content_hash")},
                            "status": "active", "updated_at": now})
        session.execute(update(TimeEntry), updates)
    if len(plan.missing):
        ids = [int(i) for i in plan.missing["id"]]
        session.execute(update(TimeEntry), [{"id": i, "status": "missing_upstream", "updated_at": now} for i in ids])
        changes.extend({"account_id": account_id, "entry_id": i, "upload_id": upload_id, "kind": "missing_upstream",
                        "old_values": {"status": "active"}, "changed_at": now} for i in ids)
    if changes:
        session.execute(time_entry_changes.insert(), changes)
    return inserted
