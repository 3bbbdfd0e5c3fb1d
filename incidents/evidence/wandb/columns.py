"""Float64 columns filled in place, one buffer per metric, for runs of millions of rows.

Each metric is one ``array('d')`` indexed by row (8 bytes a value, no Python object per value).
Buffers grow in blocks filled with :data:`MISSING`, so a row is written by position
(``current[key][row] = v``): a key absent from a row leaves its cell missing, a key written twice
in one row keeps the last value, and no row is ever appended to every column.

``MISSING`` is a NaN with its own payload. In the frame it reads as NaN like any other, but the
reader can still tell a value the run never logged from a NaN it did log (a parsed ``NaN`` is
always the canonical NaN): :meth:`Columns.logged_nonfinite` lists the logged ones.

Only metrics logged since the last block was opened are in ``current``; any other metric is
brought up to the new block's length on its first write (``set``), so a metric logged once in a
long run costs one lookup miss per block, not a write per row. At the end the buffers become the
frame's columns without a copy (``arrays(release=True)``), so peak memory stays near 8 bytes a
value instead of the two or three copies a build-then-convert path needs.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np

#: Rows the first block holds; blocks double up to ``_MAX_BLOCK`` rows, then stay at it until a
#: sixteenth of the rows so far is more, so a short wide run stays small and a long one carries at
#: most ~1/16 of unused (NaN-filled) rows, trimmed at the end.
_FIRST_BLOCK = 64
_MAX_BLOCK = 8_192
#: A quiet NaN whose payload spells "MISSIN": what a cell holds until a row writes it.
_MISSING_BITS = 0x7FF8_4D49_5353_494E
MISSING: float = struct.unpack("<d", struct.pack("<Q", _MISSING_BITS))[0]
_MISSING_BLOCK = array("d", [MISSING]) * _MAX_BLOCK


def _pad(buffer: array, length: int) -> None:
    """Extend ``buffer`` with missing cells up to ``length`` values."""
    while len(buffer) < length:
        buffer.extend(_MISSING_BLOCK[: min(length - len(buffer), _MAX_BLOCK)])


class Columns:
    """Float64 columns keyed by name plus the row index they share (``q``: int64, ``d``: float64).

    ``current`` maps each column written since the open block began to its buffer, which holds at
    least ``capacity`` rows: hot loops write ``current[name][row] = value`` directly and call
    :meth:`set` on a ``KeyError``.
    """

    def __init__(self, index_typecode: str) -> None:
        self.index: array[Any] = array(index_typecode)   # int or float rows, by the typecode
        self.current: dict[str, array] = {}
        self.capacity = 0
        self._buffers: dict[str, array] = {}
        self._ignored: dict[str, array] = {}   # names written and thrown away (``_step`` in a row)
        self._released: dict[str, np.ndarray] = {}  # the arrays handed over by ``arrays(release=True)``

    def new_row(self, index_value: float | int) -> int:
        """Open the next row and return its number; opens a new block when the buffers are full."""
        row = len(self.index)
        if row == self.capacity:
            self._open_block()
        self.index.append(index_value)
        return row

    def set(self, name: str, row: int, value: float) -> None:
        """Write ``value`` in row ``row`` (the open row) of column ``name``, creating the column."""
        buffer = self.current.get(name)
        if buffer is None:
            buffer = self._buffers.get(name)
            if buffer is None:
                buffer = self._buffers[name] = array("d")
            _pad(buffer, self.capacity)
            self.current[name] = buffer
        buffer[row] = value

    def ignore(self, name: str) -> None:
        """Let hot loops write ``name`` like a column whose values are never kept."""
        scratch = self._ignored.setdefault(name, array("d"))
        _pad(scratch, self.capacity)
        self.current[name] = scratch

    def _open_block(self) -> None:
        rows = self.capacity
        self.capacity = rows + max(min(max(rows, _FIRST_BLOCK), _MAX_BLOCK), rows // 16)
        # A fresh dict: each column is padded to the new capacity on its first write in this block.
        self.current = {}
        for name in self._ignored:
            self.ignore(name)

    def arrays(self, *, release: bool = False) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The index and every column as numpy arrays of ``len(index)`` values, NaN where missing.

        With ``release`` the buffers themselves become the arrays (trimmed, no copy) and this
        object must not be written again; without it the arrays are copies and reading goes on.
        """
        n = len(self.index)
        dtype = np.int64 if self.index.typecode == "q" else np.float64
        index = np.frombuffer(self.index, dtype=dtype).copy() if n else np.empty(0, dtype=dtype)
        columns: dict[str, np.ndarray] = {}
        for name, buffer in self._buffers.items():
            _pad(buffer, n)
            if release:
                del buffer[n:]
                columns[name] = np.frombuffer(buffer, dtype=np.float64) if n else np.empty(0)
            else:
                columns[name] = np.frombuffer(buffer, dtype=np.float64, count=n).copy() if n else np.empty(0)
        if release:
            self._buffers, self.current, self._released = {}, {}, dict(columns)
        return index, columns

    def logged_nonfinite(self) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Each column that logged a NaN or ±inf: the rows it logged a value in, and those values.

        Cells no row wrote are left out, so a metric missing from a row never counts as NaN.
        Answers before and after ``arrays(release=True)``.
        """
        n = len(self.index)
        views = self._released.items() if self._released else (
            (name, np.frombuffer(buffer, dtype=np.float64, count=min(n, len(buffer))))
            for name, buffer in self._buffers.items())
        for name, values in views:
            nonfinite = ~np.isfinite(values)
            if not nonfinite.any():
                continue
            logged = values.view(np.int64) != _MISSING_BITS
            if (nonfinite & logged).any():
                rows = np.flatnonzero(logged)
                yield name, rows, values[rows]
