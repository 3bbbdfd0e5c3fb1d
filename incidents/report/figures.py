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


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def step_time(seconds: float | None) -> str:
    """ms under a second, s under two minutes, then min: never "328498.3 ms"."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 120:
        return f"{seconds:.2f} s"
    return f"{seconds / 60:.1f} min"


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit ``step_time`` would pick for ``seconds``, and its factor from seconds."""
    return ("ms", 1000.0) if seconds < 1 else ("s", 1.0) if seconds < 120 else ("min", 1 / 60)


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
