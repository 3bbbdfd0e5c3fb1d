"""A watch calibration's fit and its own checks: the line it fits, and whether its samples can carry one.

Each size's samples (seconds of one histogram call, repeated) become a median and a spread (the
interquartile range over the median). A calibration is only as good as those: on a loaded machine the
samples of one size scatter, or the small tensors come out slower than the large ones (a neighbour's
burst landed on them), and a line through them predicts nothing. ``problems`` names what is wrong —
medians that fall as tensors grow, a spread over ``MAX_SPREAD``, medians the fitted line misses by
more than ``MAX_FIT_ERROR`` — and the calibration is refused rather than saved.

``fit`` is robust: a Huber-weighted least squares on relative residuals over every sample, so a few
interrupted calls do not move the line, and small tensors (which carry the per-tensor cost) weigh as
much as large ones (which carry the per-element cost).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

#: Largest interquartile range over median a size's samples may have. At 1.0 (the middle half of the
#: samples spans no more than the median) 24 samples still fix the median to about ±20 %, well inside
#: the 2× the prediction promises; wall-clock samples on a machine with a queue of jobs spread 2–3×.
MAX_SPREAD = 1.0
#: A median may fall below the previous (smaller) size's by this much before it counts as falling.
MONOTONIC_SLACK = 0.10
#: Largest relative miss of the fitted line at any size's median.
MAX_FIT_ERROR = 0.5
HUBER = 0.25


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile (inclusive method; one value gives it thrice)."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def size_timings(times: Mapping[int, Sequence[float]]) -> list[dict[str, Any]]:
    """Per size: median seconds (``seconds``), quartiles, spread and sample count, smallest size first."""
    rows = []
    for numel in sorted(times):
        q1, median, q3 = quartiles(sorted(times[numel]))
        rows.append({"numel": numel, "seconds": median, "q1": q1, "q3": q3,
                     "spread": (q3 - q1) / median if median > 0 else float("inf"), "n": len(times[numel])})
    return rows


def _weighted_line(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    sw = sum(w for _, _, w in points)
    mean_x = sum(w * x for x, _, w in points) / sw
    mean_y = sum(w * y for _, y, w in points) / sw
    var = sum(w * (x - mean_x) ** 2 for x, _, w in points)
    cov = sum(w * (x - mean_x) * (y - mean_y) for x, y, w in points)
    slope = max(cov / var if var else 0.0, 0.0)
    return slope, max(mean_y - slope * mean_x, 0.0)


def fit(samples: Sequence[tuple[int, float]], rounds: int = 20) -> tuple[float, float]:
    """``(seconds per element, seconds per tensor)`` of ``seconds = a × numel + b``, neither below zero.

    Weights start at 1/y² (relative error) and are scaled by Huber's weight of each sample's relative
    residual, repeated until the line settles.
    """
    points = [(float(x), float(y)) for x, y in samples if y > 0]
    if not points:
        return 0.0, 0.0
    robust = [1.0] * len(points)
    slope, intercept = 0.0, 0.0
    for _ in range(rounds):
        weighted = [(x, y, r / (y * y)) for (x, y), r in zip(points, robust, strict=True)]
        new = _weighted_line(weighted)
        if new == (slope, intercept):
            break
        slope, intercept = new
        robust = []
        for x, y in points:
            predicted = slope * x + intercept
            residual = abs(y - predicted) / predicted if predicted > 0 else float("inf")
            robust.append(1.0 if residual <= HUBER else HUBER / residual)
    return slope, intercept


def problems(rows: Sequence[Mapping[str, Any]], per_element: float, per_tensor: float,
             max_spread: float | None = None) -> list[str]:
    """What makes these samples unfit to predict with (empty when they pass), worst first."""
    max_spread = MAX_SPREAD if max_spread is None else max_spread
    found = []
    ordered = sorted(rows, key=lambda r: r["numel"])
    for smaller, larger in zip(ordered, ordered[1:], strict=False):
        if larger["seconds"] < smaller["seconds"] * (1 - MONOTONIC_SLACK):
            found.append(f"samples fall as tensors grow ({larger['numel']:,} elements took "
                         f"{larger['seconds'] * 1e3:.3g} ms, {smaller['numel']:,} took {smaller['seconds'] * 1e3:.3g} ms)")
            break
    if len(ordered) > 1 and ordered[-1]["seconds"] < 2 * ordered[0]["seconds"]:
        found.append(f"{ordered[-1]['numel']:,} elements took less than twice the time of {ordered[0]['numel']:,}: "
                     "the per-element cost is lost in the noise")
    wide = [r for r in ordered if r.get("spread") is not None and r["spread"] > max_spread]
    if wide:
        worst = max(wide, key=lambda r: r["spread"])
        found.append(f"samples at {worst['numel']:,} elements spread {worst['spread']:.0%} around their median "
                     f"(limit {max_spread:.0%})")
    misses = [(abs(per_element * r["numel"] + per_tensor - r["seconds"]) / r["seconds"], r) for r in ordered
              if r["seconds"] > 0]
    if misses and (worst_miss := max(misses, key=lambda m: m[0]))[0] > MAX_FIT_ERROR:
        found.append(f"the fitted line misses the median at {worst_miss[1]['numel']:,} elements by "
                     f"{worst_miss[0]:.0%} (limit {MAX_FIT_ERROR:.0%})")
    return found
