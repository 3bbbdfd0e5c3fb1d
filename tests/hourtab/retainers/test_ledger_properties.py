"""Properties from the issue: used hours add up exactly, rollover never exceeds its cap, rounding
never loses an entry, and every period's opening follows from the one before."""

from __future__ import annotations

import datetime as dt

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hourtab.retainers.ledger import Credit
from hourtab.retainers.rounding import round_array
from hourtab.retainers.terms import HOUR, Overage, Rollover, Rounding, Terms
from tests.helpers.ledger_frames import frame
from tests.helpers.ledger_oracle import build_ledger

START = dt.date(2024, 1, 1)

entries_st = st.lists(st.tuples(st.integers(0, 500), st.integers(0, 6 * HOUR)), max_size=60)
rounding_st = st.builds(Rounding, st.sampled_from([0, 6, 15, 30]), st.sampled_from(["up", "nearest"]),
                        st.sampled_from([0, 6, 15]))


@st.composite
def terms_st(draw):
    rollover = draw(st.sampled_from(list(Rollover)))
    overage = draw(st.sampled_from(list(Overage)))
    return Terms(
        allotment_s=draw(st.integers(1, 40)) * HOUR, start=START,
        period=draw(st.sampled_from(["monthly", "weekly", "quarterly"])),
        reset_day=draw(st.integers(1, 7)), timezone=draw(st.sampled_from(["UTC", "America/New_York"])),
        rollover=rollover, rollover_cap_s=draw(st.integers(0, 30)) * HOUR if rollover is Rollover.CAP else None,
        rollover_expiry_periods=draw(st.none() | st.integers(1, 3)),
        overage=overage, overage_rate=10 if overage is Overage.BILL else None,
        rounding=draw(rounding_st))


def _frame(raw):
    return frame([(None, START + dt.timedelta(days=d), s) for d, s in raw])


AS_OF = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)


@settings(max_examples=80, deadline=None)
@given(terms_st(), entries_st, st.lists(st.tuples(st.integers(0, 500), st.integers(-5, 10)), max_size=5))
def test_ledger_invariants(terms, raw, raw_credits):
    credits = [Credit("topup" if h > 0 and d % 2 else "adjustment", START + dt.timedelta(days=d), h * HOUR, "r")
               for d, h in raw_credits]
    ledger = build_ledger(terms, _frame(raw), credits, as_of=AS_OF)
    # The sum of all periods' used hours equals the rounded sum of all matched entries.
    rounded = round_array(np.array([s for _, s in raw], dtype=np.int64), terms.rounding)
    assert sum(p.used_s for p in ledger.periods) == int(rounded.sum())
    assert sum(p.entry_count for p in ledger.periods) == len(raw)
    for prev, nxt in zip(ledger.periods, ledger.periods[1:], strict=False):
        assert nxt.opening_s == prev.closing_s - prev.expired_s + prev.billed_s
        assert prev.expired_s >= 0 and prev.overage_s >= 0
    for p in ledger.periods:
        assert p.closing_s == p.available_s - p.used_s
        if terms.rollover is Rollover.CAP:
            assert p.rolled_in_s <= terms.rollover_cap_s
        if terms.rollover is Rollover.NONE:
            assert p.rolled_in_s == 0
        if terms.overage is Overage.BILL:
            assert p.opening_s >= 0


@settings(max_examples=50, deadline=None)
@given(entries_st, rounding_st, rounding_st)
def test_changing_rounding_never_loses_an_entry(raw, r1, r2):
    base = Terms(allotment_s=20 * HOUR, start=START, rounding=r1)
    a = build_ledger(base, _frame(raw), as_of=AS_OF)
    b = build_ledger(Terms(allotment_s=20 * HOUR, start=START, rounding=r2), _frame(raw), as_of=AS_OF)
    assert sorted(a.entries["entry_id"]) == sorted(b.entries["entry_id"]) == list(range(1, len(raw) + 1))
    assert a.entries.set_index("entry_id")["period"].equals(b.entries.set_index("entry_id")["period"])


entry_rows_st = st.lists(st.tuples(st.none() | st.integers(0, 72), st.integers(0, 3), st.integers(0, 2 * HOUR)),
                         max_size=40)


@settings(max_examples=80, deadline=None)
@given(entry_rows_st, st.randoms(use_true_random=False))
def test_entries_are_ordered_by_day_then_start_then_id(raw, rnd):
    """The ledger's entry order (page, CSV, statements) is by local day, then start time with
    date-only entries last, then id, whatever order the database returned the rows in."""
    base = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    rows = [(base + dt.timedelta(hours=h) if h is not None else None,
             (base + dt.timedelta(hours=h)).date() if h is not None else START + dt.timedelta(days=60 + d), s)
            for h, d, s in raw]
    entries = frame(rows)
    entries["entry_id"] = rnd.sample(range(1, 1000), len(rows)) if rows else entries["entry_id"]
    entries = entries.sample(frac=1, random_state=rnd.randrange(2**32))
    ledger = build_ledger(Terms(allotment_s=10 * HOUR, start=START), entries, as_of=AS_OF)
    expected = ledger.entries.sort_values(["day", "start_at", "entry_id"], kind="stable")
    assert ledger.entries["entry_id"].tolist() == expected["entry_id"].tolist()
    assert sorted(ledger.entries["entry_id"].tolist()) == sorted(entries["entry_id"].tolist())
