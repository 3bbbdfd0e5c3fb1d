"""What the steps of ``normalise`` share: the file's columns by field, the problems and warnings they
gather (as row masks, turned into messages only for the bad rows), and each row's span in time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

from hourtab.timesheets.cells import Cells
from hourtab.timesheets.errors import RowIssue
from hourtab.timesheets.table import Body

MAX_WARNINGS_PER_KIND = 20


@dataclass
class FieldColumns:
    """The file's columns by the spec's field names (``found``: field → the file's own column)."""

    body: Body
    found: dict[str, str]
    index: dict[str, int]

    def cells_of(self, column: str) -> Cells:
        """A column's distinct cells, trimmed, encoded once per read (see ``cells``)."""
        return self.body.cells(self.index[column])

    def cells(self, fld: str) -> Cells | None:
        return self.cells_of(self.found[fld]) if fld in self.found else None

    def raw(self, fld: str) -> pa.ChunkedArray:
        return self.body.table.column(self.index[self.found[fld]])


class RowProblems:
    """Row masks with what went wrong; materialised into RowIssues only for the bad rows."""

    def __init__(self, n: int, lines: np.ndarray) -> None:
        self.n = n
        self.lines = lines
        self.bad = np.zeros(n, bool)
        self._items: list[tuple[np.ndarray, str, str, str, Shown | None]] = []

    def add(self, mask: np.ndarray, column: str, message: str, expected: str, cells: Shown | None) -> None:
        mask = np.asarray(mask, bool) & ~self.bad_for_column(column)
        if mask.any():
            self.bad |= mask
            self._items.append((mask, column, message, expected, cells))

    def bad_for_column(self, column: str) -> np.ndarray:
        out = np.zeros(self.n, bool)
        for mask, col, *_ in self._items:
            if col == column:
                out |= mask
        return out

    def issues(self) -> list[RowIssue]:
        found: list[RowIssue] = []
        for mask, column, message, expected, cells in self._items:
            idx = np.flatnonzero(mask)
            values = cells.take(idx) if cells is not None else [""] * len(idx)
            found.extend(RowIssue(line=int(self.lines[i]), column=column, value=str(v or "")[:120],
                                  message=message, expected=expected) for i, v in zip(idx, values, strict=True))
        found.sort(key=lambda issue: (issue.line or 0, issue.column))
        return found


class RowWarnings:
    def __init__(self, lines: np.ndarray) -> None:
        self.lines = lines
        self.items: list[str] = []

    def add(self, mask: np.ndarray, text: Callable[[int], str]) -> None:
        idx = np.flatnonzero(mask)
        for i in idx[:MAX_WARNINGS_PER_KIND]:
            self.items.append(f"line {int(self.lines[i])}: {text(i)}")
        if len(idx) > MAX_WARNINGS_PER_KIND:
            self.items.append(f"… and {len(idx) - MAX_WARNINGS_PER_KIND} more like these")


@dataclass
class EntrySpan:
    """Each row's local day, whether it has a start time and an end, and both in UTC."""

    day: np.ndarray
    timed: np.ndarray
    has_end: np.ndarray
    start_utc: np.ndarray   # nanoseconds
    end_utc: np.ndarray
    #: End − start in seconds where the row has both, else 0.
    seconds: np.ndarray


class Shown(Protocol):
    """Cells that can show the values of some rows (a problem's value)."""

    def take(self, rows: np.ndarray) -> list[str]: ...


class LazyCells:
    """A column's cells, encoded only if a problem in it has to show a value."""

    def __init__(self, make: Callable[[], Cells]) -> None:
        self._make = make

    def take(self, rows: np.ndarray) -> list[str]:
        return self._make().take(rows)
