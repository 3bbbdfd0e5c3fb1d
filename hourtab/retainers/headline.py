"""The words a client reads first: the headline sentence of a period.

Hours are formatted by ``hourtab.retainers.units`` (re-exported here for existing callers), once,
so the page, the JSON, the CSV, the statement and the CLI never disagree about how 45,000 seconds
are written (``12.5``).
"""

from __future__ import annotations

from hourtab.retainers.ledger import PeriodBalance
from hourtab.retainers.periods import short_date
from hourtab.retainers.units import format_hours, hours_decimal

__all__ = ["format_hours", "headline", "hours_decimal", "used_percent"]


def headline(balance: PeriodBalance) -> str:
    """``12.5 of 20 h used · 7.5 h left · resets 1 Dec``, or ``22 of 20 h · 2 h over``."""
    used, available = format_hours(balance.used_s), format_hours(balance.available_s)
    if balance.closing_s < 0:
        return f"{used} of {available} h · {format_hours(-balance.closing_s)} h over"
    return (f"{used} of {available} h used · {format_hours(balance.closing_s)} h left · "
            f"resets {short_date(balance.period.end)}")


def used_percent(balance: PeriodBalance) -> int:
    """Progress-bar width, 0–100 (a period with nothing available shows full when anything is used)."""
    if balance.available_s <= 0:
        return 100 if balance.used_s else 0
    return min(100, balance.used_s * 100 // balance.available_s)
