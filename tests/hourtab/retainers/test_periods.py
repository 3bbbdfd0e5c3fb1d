"""Reset days, weekly/quarterly periods and time-zone boundaries, hand-computed."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from hourtab.retainers.periods import next_reset, periods_through
from hourtab.retainers.terms import HOUR, InvalidTerms, PeriodKind, Terms
from tests.helpers.ledger_frames import frame, on
from tests.helpers.ledger_oracle import build_ledger


def test_reset_day_splits_periods_on_the_15th():
    terms = Terms(allotment_s=10 * HOUR, start=dt.date(2025, 1, 15), reset_day=15)
    ledger = build_ledger(terms, frame([on(2025, 2, 14, 1), on(2025, 2, 15, 2)]),
                          as_of=dt.datetime(2025, 2, 20, tzinfo=dt.UTC))
    first, second = ledger.periods
    assert (first.period.start, first.period.end) == (dt.date(2025, 1, 15), dt.date(2025, 2, 15))
    assert (first.used_s, second.used_s) == (1 * HOUR, 2 * HOUR)


def test_reset_day_31_falls_on_the_last_day_of_short_months():
    terms = Terms(allotment_s=HOUR, start=dt.date(2025, 1, 31), reset_day=31)
    starts = [p.start for p in periods_through(terms, dt.date(2025, 4, 1))]
    assert starts == [dt.date(2025, 1, 31), dt.date(2025, 2, 28), dt.date(2025, 3, 31)]


def test_first_period_runs_from_start_to_first_reset():
    terms = Terms(allotment_s=HOUR, start=dt.date(2025, 1, 20), reset_day=1)
    assert next_reset(terms, terms.start) == dt.date(2025, 2, 1)


def test_weekly_resets_on_the_chosen_weekday():
    terms = Terms(allotment_s=HOUR, start=dt.date(2025, 11, 3), period=PeriodKind.WEEKLY, reset_day=1)
    periods = periods_through(terms, dt.date(2025, 11, 17))
    assert [(p.start, p.end) for p in periods] == [
        (dt.date(2025, 11, 3), dt.date(2025, 11, 10)), (dt.date(2025, 11, 10), dt.date(2025, 11, 17)),
        (dt.date(2025, 11, 17), dt.date(2025, 11, 24))]


def test_quarterly_resets_every_third_month_from_the_start():
    terms = Terms(allotment_s=HOUR, start=dt.date(2025, 2, 1), period=PeriodKind.QUARTERLY)
    periods = periods_through(terms, dt.date(2025, 9, 1))
    assert [p.start for p in periods] == [dt.date(2025, 2, 1), dt.date(2025, 5, 1), dt.date(2025, 8, 1)]


def test_entry_at_2330_local_on_the_last_day_belongs_to_that_period():
    ny = ZoneInfo("America/New_York")
    late = dt.datetime(2025, 11, 30, 23, 30, tzinfo=ny)  # 04:30 UTC on 1 Dec
    assert late.astimezone(dt.UTC).day == 1
    terms = Terms(allotment_s=20 * HOUR, start=dt.date(2025, 11, 1), timezone="America/New_York")
    ledger = build_ledger(terms, frame([(late, dt.date(2025, 12, 1), 1800)]),
                          as_of=dt.datetime(2025, 12, 2, tzinfo=dt.UTC))
    nov, dec = ledger.periods
    assert (nov.used_s, dec.used_s) == (1800, 0)


def test_entry_after_local_midnight_belongs_to_the_next_period():
    auckland = ZoneInfo("Pacific/Auckland")
    early = dt.datetime(2025, 12, 1, 0, 30, tzinfo=auckland)  # still 30 Nov in UTC
    assert early.astimezone(dt.UTC).day == 30
    terms = Terms(allotment_s=20 * HOUR, start=dt.date(2025, 11, 1), timezone="Pacific/Auckland")
    ledger = build_ledger(terms, frame([(early, None, 1800)]), as_of=dt.datetime(2025, 12, 2, tzinfo=dt.UTC))
    nov, dec = ledger.periods
    assert (nov.used_s, dec.used_s) == (0, 1800)


@pytest.mark.parametrize("kwargs, words", [
    ({"reset_day": 32}, "day of the month"),
    ({"period": "weekly", "reset_day": 8}, "weekday"),
    ({"timezone": "Mars/Olympus"}, "time zone"),
    ({"period": "daily"}, "monthly, weekly, quarterly"),
    ({"rollover": "cap"}, "cap"),
    ({"overage": "bill"}, "overage rate"),
])
def test_bad_terms_are_refused_with_a_reason(kwargs, words):
    with pytest.raises(InvalidTerms, match=words):
        Terms(allotment_s=HOUR, start=dt.date(2025, 1, 1), **kwargs)
