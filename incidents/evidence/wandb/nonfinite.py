"""Which non-finite values a run actually logged, per key, read before the history becomes a frame.

A history frame holds NaN both where a metric was not logged (an evaluation-only row has no
training loss) and where NaN was logged. Only the reader can tell them apart: a ``.wandb`` column
knows the rows it has values in, a JSON line the keys it holds, a CSV cell whether it is empty or
says ``NaN``. Each reader records here, per key, ``{"first_step", "last_step", "count",
"from_step"}``: the first and last step a non-finite value was logged at, how many, and the step
from which every logged value was non-finite (None when a finite value came after the last one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from incidents.evidence.wandb.columns import Columns

#: How a non-finite number is written in a CSV cell or a JSON value kept as text.
NON_FINITE_TEXT = frozenset({"nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"})


def nonfinite_record(steps: np.ndarray, values: np.ndarray) -> dict[str, Any] | None:
    """The record above for one key's logged (step, value) pairs in step order; None if all finite."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    where = np.flatnonzero(bad)
    finite = np.flatnonzero(~bad)
    trailing = finite.size == 0 or finite[-1] < where[-1]
    start = (int(finite[-1]) + 1 if finite.size else 0) if trailing and bad[-1] else None
    return {"first_step": int(steps[where[0]]), "last_step": int(steps[where[-1]]), "count": int(where.size),
            "from_step": int(steps[start]) if start is not None else None}


def from_columns(columns: Columns) -> dict[str, dict[str, Any]]:
    """Per key, from a ``.wandb`` reader's columns (``Columns.logged_nonfinite`` leaves out the cells
    no row wrote)."""
    index = np.frombuffer(columns.index, dtype=np.int64) if len(columns.index) else np.empty(0, np.int64)
    out = {}
    for name, rows, values in columns.logged_nonfinite():
        steps = index[rows]
        order = np.argsort(steps, kind="stable")
        found = nonfinite_record(steps[order], values[order])
        if found is not None:
            out[name] = found
    return out


def from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per key, from history rows as dicts (``wandb-history.jsonl`` lines, after flattening)."""
    logged: dict[str, list[tuple[int, float]]] = {}
    for number, row in enumerate(rows):
        step = row.get("_step", number)
        step = int(step) if isinstance(step, int | float) and not isinstance(step, bool) and math.isfinite(step) \
            else number
        for key, value in row.items():
            if isinstance(value, float) and not key.startswith("_"):
                logged.setdefault(key, []).append((step, value))
    return _summaries(logged)


def from_table(table: pd.DataFrame, steps: pd.Series) -> dict[str, dict[str, Any]]:
    """Per column, from an export table before its cells become numbers: a cell that says ``NaN``
    or ``inf`` (or holds an infinite number) was logged; an empty cell, or a NaN a binary format
    cannot tell from a missing value, was not."""
    logged: dict[str, list[tuple[int, float]]] = {}
    step_values = steps.to_numpy()
    for column in table.columns:
        if str(column).startswith("_"):
            continue
        for step, cell in zip(step_values, table[column].to_numpy(), strict=True):
            value = _logged_number(cell)
            if value is not None:
                logged.setdefault(str(column), []).append((int(step), value))
    return _summaries(logged)


def _logged_number(cell: Any) -> float | None:
    if isinstance(cell, str):
        text = cell.strip().lower()
        if text in NON_FINITE_TEXT:
            return float(text.replace("infinity", "inf"))
        try:
            return float(text)
        except ValueError:
            return None
    if isinstance(cell, (int, float, np.number)) and not isinstance(cell, bool):
        value = float(cell)
        return None if math.isnan(value) else value
    return None


def _summaries(logged: dict[str, list[tuple[int, float]]]) -> dict[str, dict[str, Any]]:
    out = {}
    for key, pairs in logged.items():
        pairs.sort(key=lambda p: p[0])
        found = nonfinite_record(np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs]))
        if found is not None:
            out[key] = found
    return out
