"""Terms versions in the pure ledger: each period runs under the version in force at its start."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from hourtab.retainers.terms import HOUR, Rounding, Terms
from tests.helpers.ledger_frames import frame, on
from tests.helpers.ledger_oracle import build_ledger

BASE = Terms(allotment_s=20 * HOUR, start=dt.date(2026, 10, 1))
LATER = replace(BASE, allotment_s=30 * HOUR, rollover="all", rounding=Rounding(15, "up"))
AS_OF = dt.datetime(2026, 12, 20, tzinfo=dt.UTC)
ENTRIES = frame([on(2026, 10, 5, 0.1), on(2026, 11, 5, 0.1), on(2026, 12, 5, 0.1)])


def test_without_versions_every_period_has_the_base_terms():
    ledger = build_ledger(BASE, ENTRIES, as_of=AS_OF)
    assert [p.allotment_s for p in ledger.periods] == [20 * HOUR] * 3
    assert all(p.terms == BASE for p in ledger.periods)


def test_a_version_applies_from_its_period_on_and_earlier_periods_are_untouched():
    alone = build_ledger(BASE, ENTRIES, as_of=AS_OF)
    ledger = build_ledger(BASE, ENTRIES, as_of=AS_OF, schedule=[(BASE.start, BASE), (dt.date(2026, 11, 1), LATER)])
    assert ledger.periods[0] == alone.periods[0]
    nov, dec = ledger.periods[1], ledger.periods[2]
    assert (nov.allotment_s, nov.used_s) == (30 * HOUR, 15 * 60)  # 6 min rounded up to 15 under the new rule
    assert ledger.periods[0].used_s == 360  # October keeps no rounding
    # November's unused hours roll into December under the new rollover rule.
    assert dec.opening_s == 30 * HOUR - 15 * 60 and ledger.terms == LATER


def test_a_version_dated_inside_a_period_applies_from_the_next_one():
    ledger = build_ledger(BASE, ENTRIES, as_of=AS_OF, schedule=[(BASE.start, BASE), (dt.date(2026, 11, 15), LATER)])
    assert [p.allotment_s // HOUR for p in ledger.periods] == [20, 20, 30]
