"""What each period's hours are worth: the ledger's exact seconds priced at that period's terms.

Pure, like the ledger: a ``PeriodBalance`` (and the credits bought in money) in, a ``PeriodMoney``
out. Each amount is computed from integer seconds and ``Decimal`` rates in one step and rounded
once, half-up, to the currency's minor unit, so the page, the JSON, the CSV and the statement
show the same amount to the smallest coin (hours × rate, never a sum of rounded parts).

- ``rate``: the hourly rate of the terms, or, without one, the fee over the period's hours.
- ``used``: the hours used in the period at the rate; ``remaining``: the hours left at the rate
  (zero when over); ``overage``: the hours over everything available at the overage rate (the
  rate when none is set), when the terms bill overage (carried overage is paid in hours instead).
- ``due``: what the period bills: its fee (without one, the hours used at the rate, billed overage
  hours at the overage rate instead), its billed overage and the top-ups bought in it; the sum of
  the amounts of its invoice lines (``billed_hours``: the hours used that the rate bills).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from hourtab.retainers.currency import quantize
from hourtab.retainers.ledger import Credit, Ledger, PeriodBalance
from hourtab.retainers.presentation import HOUR
from hourtab.retainers.terms import Overage, Terms


@dataclass(frozen=True)
class PeriodMoney:
    currency: str
    fee: Decimal | None
    #: Per hour, unrounded when derived from the fee (``None``: neither a rate nor a fee is set).
    rate: Decimal | None
    overage_rate: Decimal | None
    used: Decimal | None
    remaining: Decimal | None
    overage: Decimal
    topups: Decimal
    due: Decimal
    #: Without a fee, the hours used at the rate (hours over that are billed apart left out); else ``None``.
    hours_billed: Decimal | None = None
    hours_billed_s: int = 0


def hourly_rate(terms: Terms) -> Decimal | None:
    """The terms' hourly rate, or the fee spread over the period's hours."""
    if terms.hourly_rate is not None:
        return terms.hourly_rate
    if terms.fee is not None:
        return terms.fee * HOUR / Decimal(terms.allotment_s)
    return None


def worth(seconds: int, rate: Decimal | None, currency: str) -> Decimal | None:
    """``seconds`` at ``rate`` per hour, in the currency's minor unit (``None`` without a rate)."""
    if rate is None:
        return None
    return quantize(Decimal(seconds) * rate / HOUR, currency)


def _bought(credits: Sequence[Credit], currency: str) -> Decimal:
    return sum((c.amount for c in credits if c.kind == "topup" and c.amount is not None
                and c.currency == currency), Decimal(0))


def price_period(balance: PeriodBalance, credits: Sequence[Credit] = ()) -> PeriodMoney | None:
    """The period's amounts under its own terms; ``None`` when those terms carry no currency."""
    terms = balance.terms
    if terms is None or terms.currency is None:
        return None
    currency = terms.currency
    rate = hourly_rate(terms)
    over_rate = terms.overage_rate if terms.overage_rate is not None else rate
    overage = Decimal(0)
    if terms.overage is Overage.BILL:
        overage = worth(balance.overage_s, over_rate, currency) or Decimal(0)
    topups = quantize(_bought(credits, currency), currency)
    fee = terms.fee
    hours_s, hours = 0, None
    if fee is None:
        hours_s = balance.used_s - (balance.overage_s if terms.overage is Overage.BILL else 0)
        hours = worth(hours_s, rate, currency)
    overage = quantize(overage, currency)
    return PeriodMoney(
        currency=currency, fee=fee, rate=rate, overage_rate=over_rate, used=worth(balance.used_s, rate, currency),
        remaining=worth(max(balance.closing_s, 0), rate, currency), overage=overage, topups=topups,
        due=(fee if fee is not None else hours or Decimal(0)) + overage + topups,
        hours_billed=hours, hours_billed_s=hours_s)


def price_periods(ledger: Ledger) -> list[PeriodMoney | None]:
    """``price_period`` of every period of the ledger, in order."""
    return [price_period(p, ledger.period_credits(i)) for i, p in enumerate(ledger.periods)]


def entry_worth(ledger: Ledger, period_index: int, rounded_s: int) -> tuple[Decimal | None, str | None]:
    """One entry's rounded hours at its period's rate, and the currency (``(None, None)`` unpriced)."""
    terms = ledger.periods[period_index].terms
    if terms is None or terms.currency is None:
        return None, None
    return worth(rounded_s, hourly_rate(terms), terms.currency), terms.currency
