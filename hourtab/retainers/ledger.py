"""The hours ledger: per period, what was granted, used, carried, expired and over — exactly.

Pure: each period's used seconds and entries, its terms and the credits in (``period_balances``);
a ``Ledger`` out, its periods' entries placed and rounded by ``placed``. The sums come from the day
totals (``hourtab.retainers.totals``); ``tests.helpers.ledger_oracle`` sums every entry instead, as
the check. All sums are integer seconds, never float hours, so the page, the CSV, the PDF and the
JSON always agree to the second.

Balances are kept as *lots* so rollover caps and expiry are exact: unused allotment becomes a
rollover lot stamped with the period it came from; top-ups are prepaid lots that never lapse.
Each period consumes, in order: rolled lots oldest first (they lapse soonest), then the period's
own allotment (plus positive adjustments), then prepaid top-ups (bought, so spent last). Debt
carried from an earlier overage is paid first, from the same lots.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd

from hourtab.retainers.periods import Period, index_of
from hourtab.retainers.rounding import round_array
from hourtab.retainers.terms import HOUR, Overage, Rollover, Terms


@dataclass(frozen=True)
class Credit:
    """A top-up (a prepaid block, ``seconds`` > 0) or a manual adjustment (signed), with its reason."""

    kind: str  # "topup" | "adjustment"
    on: dt.date
    seconds: int
    reason: str
    id: int | None = None
    #: What a top-up was bought for, in ``currency`` (``None``: hours given, not sold).
    amount: Decimal | None = None
    currency: str | None = None


@dataclass(frozen=True)
class PeriodBalance:
    period: Period
    opening_s: int  # rolled-in + prepaid carried − debt carried, after expiry
    rolled_in_s: int
    prepaid_in_s: int
    allotment_s: int
    topups_s: int
    adjustments_s: int
    used_s: int
    entry_count: int
    closing_s: int
    expired_s: int  # forfeited at this period's reset (rollover rules, cap, expiry)
    overage_s: int  # hours used beyond everything available
    billed_s: int  # overage billed at the reset (overage = bill)
    billed_amount: Decimal | None
    is_open: bool  # the reset has not happened yet (current or future period)
    #: The terms this period runs (and closes) under.
    terms: Terms | None = None

    @property
    def available_s(self) -> int:
        return self.opening_s + self.allotment_s + self.topups_s + self.adjustments_s


@dataclass(frozen=True)
class Ledger:
    terms: Terms
    periods: list[PeriodBalance]
    current_index: int
    #: Matched entries with ``day`` (local date), ``rounded_s`` and ``period`` (index) added,
    #: sorted by day then start; entries before the start date are in ``before_start`` instead.
    #: A ledger read from totals holds the entries of the periods its reader asked for only.
    entries: pd.DataFrame
    before_start: pd.DataFrame
    credits: tuple[Credit, ...] = field(default=())
    #: Terms versions as (first day they apply to, terms), oldest first.
    schedule: tuple[tuple[dt.date, Terms], ...] = field(default=())
    #: How many matched entries fall before the start date (counted in no period).
    before_count: int = 0

    @property
    def current(self) -> PeriodBalance:
        return self.periods[self.current_index]

    def period_entries(self, index: int) -> pd.DataFrame:
        return self.entries[self.entries["period"] == index]

    def period_credits(self, index: int) -> list[Credit]:
        period = self.periods[index].period
        first, last = index == 0, index == len(self.periods) - 1
        return [c for c in self.credits
                if period.contains(c.on) or (first and c.on < period.start) or (last and c.on >= period.end)]


def empty_entries() -> pd.DataFrame:
    return pd.DataFrame({"entry_id": pd.Series(dtype="int64"),
                         "start_at": pd.Series(dtype="datetime64[ns, UTC]"),
                         "local_date": pd.Series(dtype="object"),
                         "duration_s": pd.Series(dtype="int64")})


def _entry_order(frame: pd.DataFrame) -> np.ndarray:
    """Positions that sort entries by day, then start (entries without a time last), then id.

    The same order as ``sort_values(["day", "start_at", "entry_id"])``, from one ``lexsort`` over
    int64 keys: pandas' multi-column sort cost a third of the ledger for three years of entries.
    """
    start = pd.to_datetime(frame["start_at"], utc=True).dt.tz_localize(None)
    start_key = start.to_numpy(dtype="datetime64[ns]").view(np.int64).copy()
    start_key[start.isna().to_numpy()] = np.iinfo(np.int64).max
    day_key = frame["day"].to_numpy(dtype="datetime64[ns]").view(np.int64)
    return np.lexsort((frame["entry_id"].to_numpy(dtype=np.int64), start_key, day_key))


def _money(amount: Decimal) -> Decimal:
    return amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def terms_for(schedule: Sequence[tuple[dt.date, Terms]], day: dt.date) -> Terms:
    """The version in force on ``day``: the last one starting on or before it (else the first)."""
    found = schedule[0][1]
    for start, terms in schedule:
        if start <= day:
            found = terms
    return found


def _round_by_period(frame: pd.DataFrame, period_terms: list[Terms]) -> np.ndarray:
    """Each entry rounded by the rounding rule of the period it falls in."""
    durations = frame["duration_s"].to_numpy(dtype=np.int64)
    index = frame["period"].to_numpy(dtype=np.int64)
    rounded = np.zeros(len(frame), dtype=np.int64)
    for rounding in {t.rounding for t in period_terms}:
        wanted = np.array([i for i, t in enumerate(period_terms) if t.rounding == rounding], dtype=np.int64)
        mask = np.isin(index, wanted)
        rounded[mask] = round_array(durations[mask], rounding)
    return rounded


def _period_index(frame: pd.DataFrame, periods: list[Period]) -> np.ndarray:
    starts = np.array([np.datetime64(p.start, "ns") for p in periods])
    return np.searchsorted(starts, frame["day"].to_numpy(dtype="datetime64[ns]"), side="right") - 1


def placed(frame: pd.DataFrame, periods: list[Period], period_terms: list[Terms]) -> pd.DataFrame:
    """Entries with their ``day``, as a ledger lists them: those in a period, with its index
    (``period``) and their seconds rounded by its rule (``rounded_s``) added, in ledger order."""
    frame = frame.assign(period=_period_index(frame, periods))
    frame = frame[frame["period"] >= 0].copy()
    frame["rounded_s"] = _round_by_period(frame, period_terms)
    return frame.iloc[_entry_order(frame)]


def period_balances(periods: list[Period], period_terms: list[Terms], used: list[int], counts: list[int],
                    credits: Sequence[Credit], today: dt.date) -> tuple[list[PeriodBalance], int]:
    """Every period's balance from its used seconds and entry count: arithmetic over periods only.

    The one computation of balances, whether the sums come from the stored day totals
    (``hourtab.retainers.totals``) or, in the tests' check, from every entry. Returns the balances
    and the current index.
    """
    topups, plus, minus = _credit_sums(periods, credits)
    current_index = min(max(index_of(periods, today), 0), len(periods) - 1)
    balances: list[PeriodBalance] = []
    lots = _Lots()
    for i, period in enumerate(periods):
        own_terms = period_terms[i]
        rolled_in, prepaid_in = lots.rolled_in(), lots.prepaid
        opening = rolled_in + prepaid_in - lots.debt
        own_left, overage = lots.spend(own_terms.allotment_s + plus[i], topups[i], used[i] + minus[i])
        expired = billed = 0
        amount = None
        if i < len(periods) - 1:
            expired, billed, amount = lots.reset(own_terms, i, own_left, overage)
        balances.append(PeriodBalance(
            period=period, opening_s=opening, rolled_in_s=rolled_in, prepaid_in_s=prepaid_in,
            allotment_s=own_terms.allotment_s, topups_s=topups[i], adjustments_s=plus[i] - minus[i],
            used_s=used[i], entry_count=counts[i],
            closing_s=opening + own_terms.allotment_s + topups[i] + plus[i] - minus[i] - used[i],
            expired_s=expired, overage_s=overage, billed_s=billed, billed_amount=amount,
            is_open=i == len(periods) - 1 or period.end > today, terms=own_terms))
    return balances, current_index


def _credit_sums(periods: list[Period], credits: Sequence[Credit]) -> tuple[list[int], list[int], list[int]]:
    """Per period: top-ups, positive adjustments, and negative adjustments (as positive seconds).

    Credits dated before the first period count in it; those after the last, in the last."""
    topups = [0] * len(periods)
    plus = [0] * len(periods)
    minus = [0] * len(periods)
    for c in credits:
        i = min(max(index_of(periods, c.on), 0), len(periods) - 1)
        if c.kind == "topup":
            topups[i] += c.seconds
        elif c.seconds >= 0:
            plus[i] += c.seconds
        else:
            minus[i] -= c.seconds
    return topups, plus, minus


@dataclass
class _Lots:
    """What a period opens with: rollover lots, prepaid top-ups left, and debt carried."""

    rolled: list[list[int]] = field(default_factory=list)  # [origin period index, seconds left], oldest first
    prepaid: int = 0
    debt: int = 0

    def rolled_in(self) -> int:
        return sum(lot[1] for lot in self.rolled)

    def spend(self, own: int, topups: int, used: int) -> tuple[int, int]:
        """Pay the debt and ``used`` from rolled lots, then ``own`` allotment, then prepaid (with this
        period's ``topups``). Returns the allotment left and the overage (what nothing paid)."""
        self.prepaid += topups
        need = self.debt + used
        for lot in self.rolled:
            take = min(lot[1], need)
            lot[1] -= take
            need -= take
        take = min(own, need)
        own -= take
        need -= take
        take = min(self.prepaid, need)
        self.prepaid -= take
        return own, need - take

    def reset(self, terms: Terms, i: int, own_left: int, overage: int) -> tuple[int, int, Decimal | None]:
        """The reset closing period ``i``: (expired, billed seconds, billed amount); the overage is
        billed or carried as debt."""
        expired, self.rolled = _reset(terms, i, own_left, self.rolled)
        if overage and terms.overage is Overage.BILL:
            self.debt = 0
            return expired, overage, _money(Decimal(overage) / HOUR * (terms.overage_rate or Decimal(0)))
        self.debt = overage
        return expired, 0, None


def _reset(terms: Terms, i: int, own_left: int, rolled: list[list[int]]) -> tuple[int, list[list[int]]]:
    """Apply the reset at the end of period ``i``: what lapses, and the rollover lots that remain."""
    expired = 0
    if terms.rollover is Rollover.NONE:
        expired += own_left
    elif own_left:
        rolled = [*rolled, [i, own_left]]
    kept = []
    for origin, left in rolled:
        # A lot rolled out of period ``origin`` is usable for ``expiry`` periods after it.
        if terms.rollover_expiry_periods is not None and i >= origin + terms.rollover_expiry_periods:
            expired += left
        elif left:
            kept.append([origin, left])
    if terms.rollover is Rollover.CAP:
        excess = sum(left for _, left in kept) - (terms.rollover_cap_s or 0)
        for lot in kept:  # trim the oldest first: they would lapse first anyway
            if excess <= 0:
                break
            cut = min(lot[1], excess)
            lot[1] -= cut
            excess -= cut
            expired += cut
        kept = [lot for lot in kept if lot[1]]
    return expired, kept
