"""Currencies and amounts of money as the retainer domain keeps them: ``Decimal``, never floats.

A currency is an ISO 4217 code Babel knows; an amount is quantised to that currency's minor unit
as Babel's data gives it (EUR and USD: cents; JPY: none; UZS: two places), so an amount written on
the page, in the JSON, the CSV and the statement is the same number to the smallest coin.
Amounts typed by people are refused, not rounded, when they carry more places than the currency has.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from babel.numbers import format_currency, get_currency_precision, is_currency

from hourtab.core.errors import InvalidInput
from hourtab.core.values import MAX_RATE

#: ``2,300,000.0``: commas that group thousands (as trackers' exports write amounts).
_GROUPED = re.compile(r"^\d{1,3}(,\d{3})+(\.\d*)?$")


class InvalidMoney(InvalidInput):
    """An amount or a currency that cannot be kept (``"abc"``, ``"XYZ"``, ``1.5`` yen)."""


def check_currency(code: str | None) -> str:
    """``"eur"`` → ``"EUR"``; refuses codes that are not ISO 4217 currencies."""
    text = (code or "").strip().upper()
    if len(text) != 3 or not text.isalpha() or not is_currency(text):
        raise InvalidMoney(f"Unknown currency {code!r}; use an ISO 4217 code such as EUR, USD, JPY or UZS.")
    return text


def minor_places(currency: str) -> int:
    """Places after the point in ``currency``'s smallest coin (EUR 2, JPY 0)."""
    return get_currency_precision(currency)


def quantize(amount: Decimal, currency: str) -> Decimal:
    """``amount`` rounded half-up to ``currency``'s minor unit."""
    return Decimal(amount).quantize(Decimal(1).scaleb(-minor_places(currency)), rounding=ROUND_HALF_UP)


def format_money(amount: Decimal, currency: str, locale: str = "en") -> str:
    """The one formatter of amounts for people (page, statement, invoice, e-mails; programs get decimal
    strings and the code): ``Decimal("3000")``, ``"EUR"`` → ``€3,000.00``; ``"JPY"`` → ``¥480,000``."""
    return format_currency(quantize(amount, currency), currency, locale=locale, currency_digits=True)


def parse_amount(text: str | Decimal | int | None, currency: str, what: str) -> Decimal | None:
    """An amount typed by a person (``"3000"``, ``"160.50"``) in ``currency``; ``None`` when empty.

    Refuses negatives, more than the currency's decimal places, and amounts beyond ``MAX_RATE``.
    """
    if text is None or str(text).strip() == "":
        return None
    try:
        value = Decimal(_plain(str(text).strip()))
    except InvalidOperation as e:
        raise InvalidMoney(f"The {what} must be an amount such as 3000 or 160.50, not {text!r}.") from e
    if not value.is_finite() or value < 0 or value > MAX_RATE:
        raise InvalidMoney(f"The {what} must be an amount from 0 to {MAX_RATE:,}, not {text!r}.")
    places = minor_places(currency)
    if value != quantize(value, currency):
        unit = "no minor unit: give a whole number" if places == 0 else f"{places} decimal places at most"
        raise InvalidMoney(f"The {what} in {currency} has {unit}, not {text!r}.")
    return quantize(value, currency)


def _plain(text: str) -> str:
    """Thousands commas dropped (``2,300,000.0``); a lone comma is a decimal comma (``160,50``)."""
    if _GROUPED.match(text):
        return text.replace(",", "")
    if text.count(",") == 1 and "." not in text:
        return text.replace(",", ".")
    return text


def stored(amount: Decimal | None, currency: str | None) -> Decimal | None:
    """An amount read back from a ``Numeric`` column, in its currency's minor unit again."""
    return None if amount is None or currency is None else quantize(amount, currency)
