"""The words a client reads first: the headline sentence of a period.

Hours are formatted by ``hourtab.retainers.units`` (re-exported here for existing callers), once,
so the page, the JSON, the CSV, the statement and the CLI never disagree about how 45,000 seconds
are written (``12.5``).
"""

from __future__ import annotations

from collections.abc import Callable

from hourtab.retainers.ledger import PeriodBalance
from hourtab.retainers.periods import short_date
from hourtab.retainers.units import format_hours, hours_decimal

__all__ = ["format_hours", "headline", "hours_decimal", "used_percent"]


def format_clock(seconds: int) -> str:
    """``2400`` → ``"0:40"``, ``-5400`` → ``"-1:30"``: hours and whole minutes (half a minute up)."""
    sign = "-" if seconds < 0 else ""
    minutes = (abs(seconds) + 30) // 60
    return f"{sign}{minutes // 60}:{minutes % 60:02d}"


def hours_formatter(unit: str = "decimal") -> Callable[[int], str]:
    """The formatter for the consultant's unit: ``"decimal"`` (0.67) or ``"hm"`` (0:40)."""
    return format_clock if unit == "hm" else format_hours


def headline(balance: PeriodBalance, unit: str = "decimal") -> str:
    """``12.5 of 20 h used · 7.5 h left · resets 1 Dec``, or ``22 of 20 h · 2 h over · resets 1 Dec``.

    Over the allotment is when a client most needs to know when the hours start again, so both
    forms end with the reset date.
    """
    h = hours_formatter(unit)
    used, available = h(balance.used_s), h(balance.available_s)
    resets = f"resets {short_date(balance.period.end)}"
    if balance.closing_s < 0:
        return f"{used} of {available} h · {h(-balance.closing_s)} h over · {resets}"
    return f"{used} of {available} h used · {h(balance.closing_s)} h left · {resets}"


def used_percent(balance: PeriodBalance) -> int:
    """Progress-bar width, 0–100 (a period with nothing available shows full when anything is used)."""
    if balance.available_s <= 0:
        return 100 if balance.used_s else 0
    return min(100, balance.used_s * 100 // balance.available_s)
