"""A column's cells as its distinct values and each row's position among them.

An export of 100,000 rows holds a few hundred distinct days, durations, clients and projects, and
rarely more than a few thousand distinct times of day. Every parser in ``cell_parsers`` is a function of
one cell, so it runs over the distinct values (one ``dictionary_encode``, a hash pass) and its
result is spread back to the rows with one numpy gather: the same answer as parsing every row,
for a fraction of the regex work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hourtab.timesheets.cell_parsers import Parsed, trim


@dataclass
class Cells:
    #: Distinct trimmed values (trimming may make two equal: harmless, each row keeps its own code).
    values: pa.Array
    #: For each row, the position of its value in ``values``.
    codes: np.ndarray
    _full: pa.Array | None = field(default=None, repr=False)

    @classmethod
    def of(cls, column: pa.Array | pa.ChunkedArray) -> Cells:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        encoded = pc.dictionary_encode(column.fill_null(""))
        return cls(trim(encoded.dictionary), encoded.indices.to_numpy(zero_copy_only=False))

    @classmethod
    def empty(cls, n: int) -> Cells:
        return cls(pa.array([""], pa.string()), np.zeros(n, np.int32))

    def __len__(self) -> int:
        return len(self.codes)

    def map(self, fn: Callable[[pa.Array], pa.Array]) -> Cells:
        """Another column of the same rows: ``fn`` applied to each distinct value."""
        return Cells(fn(self.values), self.codes)

    def rows(self, per_value: np.ndarray) -> np.ndarray:
        """A per-value numpy result spread over the rows."""
        if per_value.dtype == bool and not per_value.any():  # the usual mask: nothing wrong anywhere
            return np.zeros(len(self.codes), bool)
        return per_value[self.codes]

    def parsed(self, per_value: Parsed) -> Parsed:
        return Parsed(self.rows(per_value.values), self.rows(per_value.bad), self.rows(per_value.empty))

    def full(self) -> pa.Array:
        """Every row's (trimmed) cell, as a plain string array."""
        if self._full is None:
            self._full = self.values.take(pa.array(self.codes))
        return self._full

    def take(self, rows: np.ndarray) -> list[str]:
        return self.values.take(pa.array(self.codes[rows])).to_pylist()
