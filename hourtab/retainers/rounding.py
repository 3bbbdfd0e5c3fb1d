"""Per-entry rounding in integer seconds, for one entry or a whole column at once.

Rounding happens per entry, before totals, because that is how consultants bill and how Harvest
exports ``Hours Rounded``; rounding a total instead would disagree with every line on the page.
"""

from __future__ import annotations

import numpy as np

from hourtab.retainers.terms import Rounding, RoundingMode


def round_seconds(duration_s: int, rounding: Rounding) -> int:
    """One entry's billable seconds: rounded to the increment, then raised to the minimum.

    A zero-length entry stays zero (the minimum charges for work done, not for a stray click);
    "nearest" rounds halves up, so 3 minutes on a 6-minute increment counts as 6.
    """
    if duration_s <= 0:
        return 0
    step = rounding.increment_min * 60
    value = duration_s
    if step:
        if rounding.mode is RoundingMode.UP:
            value = -(-duration_s // step) * step
        else:
            value = (duration_s + step // 2) // step * step
    return max(value, rounding.minimum_min * 60)


def round_array(durations_s: np.ndarray, rounding: Rounding) -> np.ndarray:
    """``round_seconds`` over an int64 array (the same rules, without a Python loop)."""
    d = np.asarray(durations_s, dtype=np.int64)
    step = rounding.increment_min * 60
    value = d.copy()
    if step:
        if rounding.mode is RoundingMode.UP:
            value = -(-d // step) * step
        else:
            value = (d + step // 2) // step * step
    value = np.maximum(value, rounding.minimum_min * 60)
    return np.where(d > 0, value, 0)
