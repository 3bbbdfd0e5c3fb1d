"""Pricing a period: exact seconds at the period's own rate, rounded once to the currency's minor unit."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd
import pytest

from hourtab.retainers.currency import InvalidMoney, parse_amount
from hourtab.retainers.pricing import price_periods
from hourtab.retainers.terms import InvalidTerms, Terms
from tests.helpers.ledger_oracle import build_ledger

NOW = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)


def entries(*items: tuple[str, int]) -> pd.DataFrame:
    return pd.DataFrame({"entry_id": list(range(1, len(items) + 1)),
                         "start_at": pd.to_datetime([f"{d} 09:00" for d, _ in items], utc=True),
                         "local_date": [dt.date.fromisoformat(d) for d, _ in items],
                         "duration_s": [s for _, s in items]})


def test_hours_sold_by_the_hour_bill_the_hours_used_and_the_overage_at_its_own_rate():
    terms = Terms(allotment_s=10 * 3600, start=dt.date(2026, 1, 1), overage="bill", overage_rate=Decimal("200"),
                  hourly_rate=Decimal("99.99"), currency="USD")
    ledger = build_ledger(terms, entries(("2026-01-05", 12 * 3600 + 1)), as_of=NOW)
    january = price_periods(ledger)[0]
    # 12 h 0 min 1 s used, 2 h 0 min 1 s over: 10 h at $99.99 and the rest at $200.
    assert january.used == Decimal("1199.91") and january.hours_billed == Decimal("999.90")
    assert january.overage == Decimal("400.06") and january.due == Decimal("1399.96")
    assert january.fee is None and january.remaining == Decimal("0.00")


def test_a_fee_without_a_rate_prices_hours_at_the_fee_over_the_hours_and_the_rate_changes_with_the_terms():
    first = Terms(allotment_s=20 * 3600, start=dt.date(2026, 1, 1), fee=Decimal("300000"), currency="JPY")
    second = Terms(allotment_s=20 * 3600, start=dt.date(2026, 1, 1), fee=Decimal("300000"),
                   hourly_rate=Decimal("20000"), currency="JPY")
    ledger = build_ledger(first, entries(("2026-01-05", 7 * 3600 + 1800), ("2026-02-03", 3600)), as_of=NOW,
                          schedule=[(dt.date(2026, 1, 1), first), (dt.date(2026, 2, 1), second)])
    january, february, march = price_periods(ledger)
    assert january.used == Decimal("112500") and january.remaining == Decimal("187500")   # ¥15,000 an hour
    assert february.used == Decimal("20000") and february.due == Decimal("300000")
    assert str(march.used) == "0"   # whole yen: no decimal point


def test_amounts_typed_in_refuse_more_places_than_the_currency_has_and_unknown_currencies():
    assert parse_amount("2,300,000.0", "UZS", "fee") == Decimal("2300000.00")
    assert parse_amount("160,5", "EUR", "fee") == Decimal("160.50")
    for text, currency in (("1.5", "JPY"), ("1.005", "EUR"), ("-3", "EUR"), ("NaN", "EUR"), ("ten", "USD")):
        with pytest.raises(InvalidMoney):
            parse_amount(text, currency, "fee")
    with pytest.raises(InvalidTerms, match="currency"):
        Terms(allotment_s=3600, start=dt.date(2026, 1, 1), fee=Decimal("10"))
    with pytest.raises(InvalidMoney, match="Unknown currency"):
        Terms(allotment_s=3600, start=dt.date(2026, 1, 1), fee=Decimal("10"), currency="EURO")
