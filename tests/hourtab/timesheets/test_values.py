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


TWELVE = st.one_of(st.builds(lambda c, ampm: f"{c} {ampm}", CANONICAL, st.sampled_from(["AM", "PM", "am", "P.M."])),
                   st.sampled_from(["", "12:00 AM", "12:30:15 PM", "0:15 AM", "13:00 PM", "9:5 AM", "9:05  AM",
                                    "9:05 XM", " AM", "1 AM", "9:05:60 PM", "09:00", "7.30 PM"]))


def times_general(cells: pa.Array) -> tuple:
    """times_of_day with its 12 h fast path switched off."""
    original = V._fixed_twelve_hour
    V._fixed_twelve_hour = lambda *_: None
    try:
        return V.times_of_day(cells)
    finally:
        V._fixed_twelve_hour = original


@settings(max_examples=300, deadline=None)
@given(st.lists(TWELVE, min_size=1, max_size=30))
def test_twelve_hour_fast_path_equals_the_general_path(cells):
    arr = pa.array(cells, pa.string())
    for array in (arr, arr.slice(1)):
        (got, got12, got_s), (want, want12, want_s) = V.times_of_day(array), times_general(array)
        assert (got12, got_s) == (want12, want_s), array.to_pylist()
        for a, b in ((got.values, want.values), (got.bad, want.bad), (got.empty, want.empty)):
            assert a.tolist() == b.tolist(), (array.to_pylist(), a, b)


def test_twelve_hour_fast_path_is_taken_for_clockify_times():
    core, pm, twelve, (matched, hours, minutes, seconds) = V._fixed_twelve_hour(
        pa.array(["9:05:12 AM", "", "12:00:00 PM"]))
    assert core.to_pylist() == ["9:05:12", "", "12:00:00"]
    assert pm.tolist() == [False, False, True] and twelve.tolist() == [True, False, True]
    assert matched.tolist() == [True, False, True] and hours.tolist() == [9, 0, 12]
    assert V._fixed_twelve_hour(pa.array(["9:05 am"])) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=6),
                          st.text(alphabet="ab1: \t\u00a0\u2003\x1f~", max_size=4)), min_size=1, max_size=20))
def test_trimming_skipped_only_when_nothing_to_trim(cells):
    import pyarrow.compute as pc

    arr = pa.array(cells, pa.string())
    for array in (arr, arr.slice(1)):
        assert V._strings(array).to_pylist() == pc.utf8_trim_whitespace(array.fill_null("")).to_pylist()
