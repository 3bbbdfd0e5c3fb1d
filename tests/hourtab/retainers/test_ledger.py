"""Hand-computed ledgers: rollover cap, expiry, overage (carry and bill), top-ups, adjustments."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from hourtab.retainers.ledger import Credit
from hourtab.retainers.presentation import headline
from hourtab.retainers.terms import HOUR, Overage, Rollover, Terms
from tests.helpers.ledger_frames import frame, on
from tests.helpers.ledger_oracle import build_ledger

H = HOUR


def at(y, m, d):
    return dt.datetime(y, m, d, 12, tzinfo=dt.UTC)


def test_rollover_cap_trims_the_oldest_hours_first():
    terms = Terms(allotment_s=10 * H, start=dt.date(2025, 1, 1), rollover=Rollover.CAP, rollover_cap_s=4 * H)
    ledger = build_ledger(terms, frame([on(2025, 1, 10, 3), on(2025, 2, 3, 2)]), as_of=at(2025, 3, 15))
    jan, feb, mar = ledger.periods
    # Jan: 10 granted, 3 used → 7 unused, 4 roll over (the cap), 3 lapse.
    assert (jan.opening_s, jan.used_s, jan.closing_s, jan.expired_s) == (0, 3 * H, 7 * H, 3 * H)
    # Feb: opens with 4 rolled; the 2 used come out of the rolled hours first (they lapse first);
    # 2 rolled + 10 own = 12 unused, capped at 4 → 8 lapse.
    assert (feb.opening_s, feb.rolled_in_s, feb.used_s, feb.closing_s, feb.expired_s) == (
        4 * H, 4 * H, 2 * H, 12 * H, 8 * H)
    assert (mar.opening_s, mar.rolled_in_s, mar.is_open) == (4 * H, 4 * H, True)
    assert ledger.current_index == 2


def test_rolled_hours_expire_after_n_periods():
    terms = Terms(allotment_s=10 * H, start=dt.date(2025, 1, 1), rollover=Rollover.ALL,
                  rollover_expiry_periods=1)
    ledger = build_ledger(terms, frame([on(2025, 1, 5, 4), on(2025, 2, 5, 3)]), as_of=at(2025, 3, 2))
    jan, feb, mar = ledger.periods
    assert (jan.closing_s, jan.expired_s) == (6 * H, 0)
    # Feb: 6 rolled from Jan; 3 used from them; the 3 Jan hours left lapse at Feb's reset.
    assert (feb.opening_s, feb.closing_s, feb.expired_s) == (6 * H, 13 * H, 3 * H)
    assert mar.opening_s == 10 * H  # only Feb's own unused hours remain


def test_no_rollover_forfeits_unused_hours():
    terms = Terms(allotment_s=20 * H, start=dt.date(2025, 1, 1))
    ledger = build_ledger(terms, frame([on(2025, 1, 2, 5)]), as_of=at(2025, 2, 1))
    jan, feb = ledger.periods
    assert (jan.closing_s, jan.expired_s, feb.opening_s) == (15 * H, 15 * H, 0)


def test_overage_carried_as_negative_balance():
    terms = Terms(allotment_s=20 * H, start=dt.date(2025, 1, 1), rollover=Rollover.ALL)
    entries = frame([on(2025, 1, 3, 12), on(2025, 1, 20, 10), on(2025, 2, 3, 5)])
    jan_view = build_ledger(terms, entries, as_of=at(2025, 1, 25))
    assert headline(jan_view.current) == "22 of 20 h · 2 h over · resets 1 Feb"  # issue 19: the reset stays
    jan, feb = build_ledger(terms, entries, as_of=at(2025, 2, 10)).periods
    assert (jan.closing_s, jan.overage_s, jan.billed_s) == (-2 * H, 2 * H, 0)
    assert (feb.opening_s, feb.available_s, feb.closing_s) == (-2 * H, 18 * H, 13 * H)


def test_overage_billed_at_rate_and_reset():
    terms = Terms(allotment_s=20 * H, start=dt.date(2025, 1, 1), overage=Overage.BILL,
                  overage_rate=Decimal("150"))
    jan, feb = build_ledger(terms, frame([on(2025, 1, 3, 22.5)]), as_of=at(2025, 2, 10)).periods
    assert (jan.overage_s, jan.billed_s, jan.billed_amount) == (2.5 * H, 2.5 * H, Decimal("375.00"))
    assert feb.opening_s == 0 and feb.closing_s == 20 * H


def test_topups_are_spent_last_and_never_lapse():
    terms = Terms(allotment_s=10 * H, start=dt.date(2025, 1, 1))
    credits = [Credit("topup", dt.date(2025, 1, 8), 5 * H, "prepaid block"),
               Credit("adjustment", dt.date(2025, 1, 9), -1 * H, "duplicate call removed")]
    jan, feb = build_ledger(terms, frame([on(2025, 1, 4, 12)]), credits, as_of=at(2025, 2, 2)).periods
    # 10 + 5 − 1 = 14 available; 12 used: own 10 − 1 adjustment consumed first, then 3 prepaid.
    assert (jan.available_s, jan.closing_s, jan.expired_s) == (14 * H, 2 * H, 0)
    assert (feb.opening_s, feb.prepaid_in_s) == (2 * H, 2 * H)


def test_headline_in_the_issue_style():
    terms = Terms(allotment_s=20 * H, start=dt.date(2025, 11, 1))
    ledger = build_ledger(terms, frame([on(2025, 11, 3, 10), on(2025, 11, 12, 2.5)]), as_of=at(2025, 11, 15))
    assert headline(ledger.current) == "12.5 of 20 h used · 7.5 h left · resets 1 Dec"


def test_entries_before_start_are_set_aside_not_counted():
    terms = Terms(allotment_s=20 * H, start=dt.date(2025, 11, 1))
    ledger = build_ledger(terms, frame([on(2025, 10, 31, 3), on(2025, 11, 1, 1)]), as_of=at(2025, 11, 2))
    assert ledger.current.used_s == 1 * H and len(ledger.before_start) == 1
