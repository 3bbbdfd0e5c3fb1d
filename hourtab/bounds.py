"""Sane ranges for dates and amounts people type, checked in the domain before anything is stored.

A retainer starting on 9999-12-31 is not a plan anybody has; accepted, it made period arithmetic
overflow on every page that showed the retainer. Dates outside 2000–2100 and amounts beyond any
real retainer are refused with a message naming the field.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from hourtab.errors import InvalidInput

EARLIEST = dt.date(2000, 1, 1)
LATEST = dt.date(2100, 12, 31)
#: More hours than any retainer, top-up or cap could hold (a century of days).
MAX_HOURS = Decimal(1_000_000)
MAX_RATE = Decimal(1_000_000_000)


def check_date(value: dt.date | dt.datetime | None, what: str) -> None:
    """Refuse dates outside 2000–2100; ``what`` names the field in the message."""
    if value is None:
        return
    day = value.date() if isinstance(value, dt.datetime) else value
    if not EARLIEST <= day <= LATEST:
        raise InvalidInput(f"{what[:1].upper()}{what[1:]} must be between {EARLIEST} and {LATEST}, "
                           f"not {day.isoformat()}.")
