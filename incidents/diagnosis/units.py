"""How a time or a percentage is written, in verdicts and in reports alike.

A verdict and the report built from it show the same quantities (the watch share, a step time,
the GPU utilisation); written by one formatter, each shows as one figure everywhere ("73.9 %",
"54.0 ms"), never "74%" in the verdict beside "73.9 %" in the table.
"""

from __future__ import annotations

import math

#: (below this many seconds, unit, units per second, decimals)
UnitScale = tuple[float, str, tuple[int, int], int]

#: (below this many seconds, unit, units per second as a ratio, decimals), smallest unit first. The
#: ratio stays two integers so that 6219 s shows as 103.7 min, as ``6219 / 60`` rounds it.
_DURATION_UNITS = (
    (1, "ms", (1000, 1), 0), (120, "s", (1, 1), 1), (7200, "min", (1, 60), 1), (math.inf, "h", (1, 3600), 1))
#: Step times stay in minutes at most, with one more decimal below two minutes.
_STEP_UNITS = ((1, "ms", (1000, 1), 1), (120, "s", (1, 1), 2), (math.inf, "min", (1, 60), 1))


def _unit(seconds: float, units: tuple[UnitScale, ...]) -> tuple[str, tuple[int, int], int]:
    _, unit, ratio, decimals = next(u for u in units if seconds < u[0])
    return unit, ratio, decimals


def _scaled(seconds: float | None, units: tuple[UnitScale, ...]) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    unit, (times, per), decimals = _unit(seconds, units)
    return f"{seconds * times / per:.{decimals}f} {unit}"


def duration(seconds: float | None) -> str:
    return _scaled(seconds, _DURATION_UNITS)


def step_time(seconds: float | None) -> str:
    """ms under a second, s under two minutes, then min: never "328498.3 ms"."""
    return _scaled(seconds, _STEP_UNITS)


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit ``step_time`` would pick for ``seconds``, and its factor from seconds."""
    unit, (times, per), _ = _unit(seconds, _STEP_UNITS)
    return unit, times / per


def percent(value: float | None) -> str:
    """A percentage (0–100) with one decimal: ``73.9 %``."""
    return "—" if value is None else f"{value:.1f} %"


def share(fraction: float | None) -> str:
    """A fraction (0–1) as ``percent`` writes it: ``0.739`` → ``73.9 %``."""
    return "—" if fraction is None else percent(fraction * 100)
