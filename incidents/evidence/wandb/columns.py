"""Columns built one value at a time, for runs too long to keep as Python objects.

A metric logged at every step is stored as a bare ``array('d')`` (8 bytes a value); the first
time it skips a step it switches to (row, value) pairs. Rows are never padded per step, so the
cost of a row is proportional to the metrics it actually has.
"""

from __future__ import annotations

from array import array

import numpy as np


class Column:
    """Values of one metric; ``rows`` is ``None`` while the column has a value in every row."""

    __slots__ = ("rows", "values")

    def __init__(self, first_row: int) -> None:
        self.values = array("d")
        self.rows: array | None = None if first_row == 0 else array("q")

    def add(self, row: int, value: float) -> None:
        rows = self.rows
        if rows is None:
            if row == len(self.values):
                self.values.append(value)
                return
            rows = self.rows = array("q", range(len(self.values)))
        if rows and rows[-1] == row:      # the same key twice in one row: last one wins
            self.values[-1] = value
            return
        rows.append(row)
        self.values.append(value)

    def dense(self, n_rows: int) -> np.ndarray:
        """The column as ``n_rows`` float64 values, NaN where the metric was not logged."""
        values = np.frombuffer(self.values, dtype=np.float64) if len(self.values) else np.empty(0)
        if self.rows is None and len(values) == n_rows:
            return values.copy()
        out = np.full(n_rows, np.nan)
        rows = np.arange(len(values)) if self.rows is None else np.frombuffer(self.rows, dtype=np.int64)
        out[rows] = values
        return out


class ColumnSet:
    """Columns keyed by name plus the row index they share."""

    def __init__(self, index_typecode: str) -> None:
        self.index = array(index_typecode)
        self.columns: dict[str, Column] = {}

    def new_row(self, index_value: float | int) -> int:
        self.index.append(index_value)
        return len(self.index) - 1

    def column(self, name: str, row: int) -> Column:
        col = self.columns.get(name)
        if col is None:
            col = self.columns[name] = Column(row)
        return col

    def arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        n = len(self.index)
        index = np.frombuffer(self.index, dtype=np.int64 if self.index.typecode == "q" else np.float64).copy() \
            if n else np.empty(0, dtype=np.int64 if self.index.typecode == "q" else np.float64)
        return index, {name: col.dense(n) for name, col in self.columns.items()}
