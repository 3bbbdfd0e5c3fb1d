"""Money as people read it: the one formatter of amounts for the page, the statement, the invoice
and the alert e-mails (programs get decimal strings and the currency code instead)."""

from __future__ import annotations

from decimal import Decimal

from babel.numbers import format_currency

from hourtab.retainers.currency import quantize


def format_money(amount: Decimal, currency: str, locale: str = "en") -> str:
    """``Decimal("3000")``, ``"EUR"`` → ``€3,000.00``; ``"JPY"`` → ``¥480,000`` (the currency's minor unit)."""
    return format_currency(quantize(amount, currency), currency, locale=locale, currency_digits=True)
