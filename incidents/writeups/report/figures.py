"""Formatting and sourcing of figures: every computed number in a report carries where it came from."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    """A number as shown, with its source ("run abc123 · history step_time_s") for a footnote."""

    text: str
    source: str = ""
    value: float | None = None

    @property
    def missing(self) -> bool:
        return self.value is None


def missing(reason: str) -> Figure:
    return Figure(reason, "", None)


#: (below this many seconds, unit, units per second as a ratio, decimals), smallest unit first. The
#: ratio stays two integers so that 6219 s shows as 103.7 min, as ``6219 / 60`` rounds it.
_DURATION_UNITS = (
    (1, "ms", (1000, 1), 0), (120, "s", (1, 1), 1), (7200, "min", (1, 60), 1), (math.inf, "h", (1, 3600), 1))
#: Step times stay in minutes at most, with one more decimal below two minutes.
_STEP_UNITS = ((1, "ms", (1000, 1), 1), (120, "s", (1, 1), 2), (math.inf, "min", (1, 60), 1))


def _unit(seconds: float, units) -> tuple[str, tuple[int, int], int]:
    _, unit, ratio, decimals = next(u for u in units if seconds < u[0])
    return unit, ratio, decimals


def _scaled(seconds: float | None, units) -> str:
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


def hours(seconds: float) -> str:
    """0.1 h precision, the consulting norm, used for every hour figure on a page."""
    return f"{round(seconds / 3600, 1):.1f}"


def lower_first(text: str) -> str:
    """Lower-case a sentence's first letter to continue a clause, leaving acronyms (GPU, NaN) alone."""
    word = text.split(" ", 1)[0]
    if any(c.isupper() for c in word[1:]):     # GPU, NaN, PyTorch: a name, not a sentence's capital
        return text
    return text[:1].lower() + text[1:]


def clause(text: str) -> str:
    """A clause to join with "; ": no trailing full stop (no ".;" or "..")."""
    return text.strip().rstrip(".").strip()


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} %"


def number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def run_label(run: Any) -> str:
    """How a run is cited: its id, and its display name when it differs."""
    rid = getattr(run, "run_id", "") or "?"
    name = getattr(run, "name", "") or ""
    return f"{rid} ({name})" if name and name != rid else rid
