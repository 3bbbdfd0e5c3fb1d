"""Formatting and sourcing of figures: every computed number in a report carries where it came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Times and percentages are written as the verdicts write them (one figure in both places).
from incidents.diagnosis.units import duration, percent, step_time, time_unit

__all__ = ["Figure", "clause", "duration", "hours", "lower_first", "missing", "number", "percent",
           "run_label", "step_time", "time_unit"]


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
