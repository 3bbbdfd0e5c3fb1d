"""Chart series cut to about 2,000 points without losing a spike: each bucket keeps its min and max.

A plain stride (every n-th point) drops exactly the short stalls an incident report is about;
min/max buckets keep both extremes of every stretch, in time order, so the drawn envelope of a
million-point series looks the same as the full one.
"""

from __future__ import annotations

import numpy as np

DEFAULT_POINTS = 2000


def minmax(x: np.ndarray, y: np.ndarray, points: int = DEFAULT_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``points`` (x, y) pairs: each of ``points // 2`` buckets keeps its min and its max."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    keep = ~np.isnan(y)
    x, y = x[keep], y[keep]
    if len(y) <= points:
        return x, y
    buckets = max(points // 2, 1)
    edges = np.linspace(0, len(y), buckets + 1).astype(np.int64)
    starts = edges[:-1]
    lo = np.minimum.reduceat(y, starts)
    hi = np.maximum.reduceat(y, starts)
    picked = []
    for start, end, vmin, vmax in zip(starts, edges[1:], lo, hi, strict=True):
        segment = y[start:end]
        i_min = start + int(np.argmax(segment == vmin))
        i_max = start + int(np.argmax(segment == vmax))
        picked.extend(sorted({i_min, i_max}))
    idx = np.asarray(picked, dtype=np.int64)
    return x[idx], y[idx]
