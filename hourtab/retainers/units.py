"""Hours as the retainer domain counts and shows them: exact seconds in, decimal hours out.

A leaf module (nothing from the package imported here), so terms, ledgers and pages can all use it.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

HOUR = 3600


def hours_decimal(seconds: int, places: int = 2) -> Decimal:
    """Exact seconds → hours, rounded half-up to ``places`` decimals (0.1 h steps stay exact)."""
    q = Decimal(1).scaleb(-places)
    return (Decimal(seconds) / HOUR).quantize(q, rounding=ROUND_HALF_UP)


def format_hours(seconds: int, places: int = 2) -> str:
    """``45000`` → ``"12.5"``, ``72000`` → ``"20"``: no trailing zeros, no exponent."""
    value = hours_decimal(seconds, places).normalize()
    text = f"{value:f}"
    return "0" if text in ("-0", "0") else text
