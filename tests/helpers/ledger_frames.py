"""Entry frames built the way the retainer service builds them, from plain tuples."""

from __future__ import annotations

import datetime as dt

import pandas as pd


def frame(rows: list[tuple]) -> pd.DataFrame:
    """rows: (start_at aware datetime or None, local_date or None, duration seconds[, description])."""
    return pd.DataFrame({
        "entry_id": pd.Series(range(1, len(rows) + 1), dtype="int64"),
        "start_at": pd.to_datetime(pd.Series([r[0] for r in rows], dtype="object"), utc=True),
        "local_date": pd.Series([r[1] or (r[0].date() if r[0] else None) for r in rows], dtype="object"),
        "duration_s": pd.Series([r[2] for r in rows], dtype="int64"),
        "description": [r[3] if len(r) > 3 else "" for r in rows],
    })


def on(y: int, m: int, d: int, hours: float) -> tuple:
    """An entry of ``hours`` on a date (no start time, as Harvest exports)."""
    return (None, dt.date(y, m, d), int(round(hours * 3600)))
