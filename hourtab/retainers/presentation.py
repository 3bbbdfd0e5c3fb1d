"""How the hours domain writes hours and dates: the one module the page, the JSON, the CSV, the feed,
the alert e-mails and the statement all format with, so they never disagree about how 45,000
seconds (``12.5`` or ``12:30``) or a day (``Tue 2 Dec 2025``) are written.

Hours come in the consultant's unit (``Account.hours_unit``: ``"decimal"`` or ``"hm"``, see
``hourtab.settings.HoursUnit``); programs (the JSON, the CSV) get decimal hours beside the exact seconds.

A leaf module (the standard library and the kernel's writer of languages), so terms, periods,
ledgers and views can all use it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from hourtab.core.i18n import Writer

HOUR = 3600
#: The consultant's unit that writes hours as a clock (``HoursUnit.CLOCK``); any other is decimal.
CLOCK = "hm"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def hours_decimal(seconds: int, places: int = 2) -> Decimal:
    """Exact seconds → hours, rounded half-up to ``places`` decimals (0.1 h steps stay exact)."""
    q = Decimal(1).scaleb(-places)
    return (Decimal(seconds) / HOUR).quantize(q, rounding=ROUND_HALF_UP)


def format_hours(seconds: int, places: int = 2) -> str:
    """``45000`` → ``"12.5"``, ``72000`` → ``"20"``: no trailing zeros, no exponent."""
    value = hours_decimal(seconds, places).normalize()
    text = f"{value:f}"
    return "0" if text in ("-0", "0") else text


def format_clock(seconds: int) -> str:
    """``2400`` → ``"0:40"``, ``-5400`` → ``"-1:30"``: hours and whole minutes (half a minute up)."""
    sign = "-" if seconds < 0 else ""
    minutes = (abs(seconds) + 30) // 60
    return f"{sign}{minutes // 60}:{minutes % 60:02d}"


def hours_formatter(unit: str = "decimal") -> Callable[[int], str]:
    """The formatter for the consultant's unit: ``"decimal"`` (0.67) or ``"hm"`` (0:40)."""
    return format_clock if unit == CLOCK else format_hours


def unit_label(unit: str = "decimal") -> str:
    """The column heading of hours written in ``unit``: ``h`` or ``h:mm``."""
    return "h:mm" if unit == CLOCK else "h"


def short_date(day: dt.date, with_year: bool = False) -> str:
    """``1 Dec`` (or ``1 Dec 2025``): the style of the headline, the same in every locale."""
    text = f"{day.day} {MONTHS[day.month - 1]}"
    return f"{text} {day.year}" if with_year else text


def day_label(day: dt.date) -> str:
    """``Tue 2 Dec 2025``: a day heading on the page (English whatever the server's locale)."""
    return f"{WEEKDAYS[day.weekday()]} {short_date(day, with_year=True)}"


def moment(at: dt.datetime, tz: Any) -> str:
    """``2 Dec 2025, 14:05 (Europe/Berlin)``: an instant as the client reads it, in the retainer's zone."""
    local = at.astimezone(tz)
    return f"{short_date(local.date(), with_year=True)}, {local:%H:%M} ({getattr(tz, 'key', tz)})"


def headline(balance: Any, unit: str = "decimal", writer: Writer | None = None) -> str:
    """``12.5 of 20 h used · 7.5 h left · resets 1 Dec``, or ``22 of 20 h · 2 h over · resets 1 Dec``.

    ``balance`` is a ``ledger.PeriodBalance``; ``writer``: the client's language (default English).
    Over the allotment is when a client most needs to know when the hours start again, so both
    forms end with the reset date.
    """
    w = writer or Writer()
    h = hours_formatter(unit)
    figures = {"used": h(balance.used_s), "available": h(balance.available_s), "day": w.short_day(balance.period.end)}
    if balance.closing_s < 0:
        return w.gettext("%(used)s of %(available)s h · %(over)s h over · resets %(day)s") % {
            **figures, "over": h(-balance.closing_s)}
    return w.gettext("%(used)s of %(available)s h used · %(left)s h left · resets %(day)s") % {
        **figures, "left": h(balance.closing_s)}


def used_percent(balance: Any) -> int:
    """Progress-bar width, 0–100 (a period with nothing available shows full when anything is used)."""
    if balance.available_s <= 0:
        return 100 if balance.used_s else 0
    return min(100, balance.used_s * 100 // balance.available_s)
