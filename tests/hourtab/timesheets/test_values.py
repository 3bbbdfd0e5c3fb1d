"""The byte-matrix fast path for clock cells gives exactly what the regex path gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hourtab.timesheets import values as V

DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=8)
TWO = st.text(alphabet="0123456789", min_size=2, max_size=2)
CANONICAL = st.builds(lambda h, m, s, seconds: f"{h}:{m}" + (f":{s}" if seconds else ""), DIGITS, TWO, TWO,
                      st.booleans())
CLOCKS = st.text(alphabet="0123456789:", min_size=0, max_size=14)
CELLS = st.one_of(CANONICAL, CANONICAL, CANONICAL, CLOCKS, st.sampled_from(["", "9:05", "23:59:59", "100:00:00", "1234567:00", "1:5", "١٢:٠٠",
                                           " 1:00", "1:00 ", "1 0:05", "10:05\u00a0", "12:00 PM"]))


def regex_path(cells: pa.Array, pattern: str) -> tuple[np.ndarray, ...]:
    """The general path alone (the fast path switched off)."""
    original = V._fixed_colon_numbers
    V._fixed_colon_numbers = lambda *_: None
    try:
        return V._colon_numbers(cells, pattern, 0)
    finally:
        V._fixed_colon_numbers = original


@settings(max_examples=300, deadline=None)
@given(st.lists(CELLS, min_size=1, max_size=30), st.sampled_from([(r"^\d{1,7}:\d{1,2}(:\d{1,2})?$", 7),
                                                                  (r"^\d{1,2}:\d{2}(:\d{2})?$", 2)]))
def test_fast_clock_numbers_equal_the_regex_path(cells, rule):
    pattern, hour_digits = rule
    arr = pa.array(cells, pa.string())
    for array in (arr, arr.slice(1)):
        fast = V._fixed_colon_numbers(array, hour_digits)
        if fast is None:
            continue
        slow = regex_path(array, pattern)
        for got, want in zip(fast, slow, strict=True):
            assert got.tolist() == want.tolist(), (array.to_pylist(), got, want)


def test_fast_path_is_taken_for_ordinary_exports():
    arr = pa.array(["09:00:00", "17:30:05", "", "123:04:05", "7:45"])
    matched, hours, minutes, seconds = V._fixed_colon_numbers(arr, 7)
    assert matched.tolist() == [True, True, False, True, True]
    assert hours.tolist() == [9, 17, 0, 123, 7] and minutes.tolist() == [0, 30, 0, 4, 45]
    assert seconds.tolist() == [0, 5, 0, 5, 0]
    assert V._fixed_colon_numbers(pa.array(["9:5"]), 7) is None
