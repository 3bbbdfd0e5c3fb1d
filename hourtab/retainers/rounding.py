"""Per-entry rounding in integer seconds, over a column of entries at once.

Rounding happens per entry, before totals, because that is how consultants bill and how Harvest
exports ``Hours Rounded``; rounding a total instead would disagree with every line on the page.
"""

from __future__ import annotations

import numpy as np

from hourtab.retainers.terms import Rounding, RoundingMode


def round_array(durations_s: np.ndarray, rounding: Rounding) -> np.ndarray:
    """Each entry's billable seconds: rounded to the increment, then raised to the minimum.

    A zero-length entry stays zero (the minimum charges for work done, not for a stray click);
    "nearest" rounds halves up, so 3 minutes on a 6-minute increment counts as 6. Works on a whole
    int64 column at once, without a Python loop.
    """
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
