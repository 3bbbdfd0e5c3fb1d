"""Per-entry rounding, hand-computed; the vectorised and scalar forms agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourtab.retainers.rounding import round_array
from hourtab.retainers.terms import InvalidTerms, Rounding

M = 60


def _one(seconds: int, rounding: Rounding) -> int:
    return int(round_array(np.array([seconds], dtype=np.int64), rounding)[0])


@pytest.mark.parametrize("rounding, seconds, expected", [
    (Rounding(6, "up"), 1 * M, 6 * M),
    (Rounding(6, "up"), 6 * M, 6 * M),
    (Rounding(6, "up"), 7 * M, 12 * M),
    (Rounding(15, "nearest"), 7 * M, 0),
    (Rounding(15, "nearest"), 7 * M + 30, 15 * M),  # exactly half rounds up
    (Rounding(15, "nearest"), 22 * M, 15 * M),
    (Rounding(30, "up"), 31 * M, 60 * M),
    (Rounding(6, "up", minimum_min=15), 1 * M, 15 * M),
    (Rounding(0, "up", minimum_min=15), 20 * M + 7, 20 * M + 7),
    (Rounding(0), 1234, 1234),
    (Rounding(6, "up", minimum_min=15), 0, 0),
])
def test_round_one_entry(rounding, seconds, expected):
    assert _one(seconds, rounding) == expected


def test_only_known_increments():
    with pytest.raises(InvalidTerms, match="0, 6, 15, 30"):
        Rounding(10)


@given(st.lists(st.integers(0, 20 * 3600), max_size=50), st.sampled_from([0, 6, 15, 30]),
       st.sampled_from(["up", "nearest"]), st.sampled_from([0, 6, 15]))
def test_each_entry_is_rounded_on_its_own(durations, inc, mode, minimum):
    r = Rounding(inc, mode, minimum)
    assert round_array(np.array(durations, dtype=np.int64), r).tolist() == [_one(d, r) for d in durations]
