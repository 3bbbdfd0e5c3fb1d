"""Period boundaries: local calendar dates in the retainer's time zone.

Boundaries are dates, not instants, because a reset happens at local midnight wherever the client
is: an entry at 23:30 on the last day belongs to that period even when it is already tomorrow in
UTC. The first period starts on the retainer's start date and ends at the first reset after it.
"""

from __future__ import annotations

import bisect
import calendar
import datetime as dt
import functools
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from hourtab.retainers.presentation import MONTHS, short_date
from hourtab.retainers.terms import PeriodKind, Terms


@dataclass(frozen=True)
class Period:
    index: int
    start: dt.date  # first local day, inclusive
    end: dt.date  # first local day of the next period, exclusive

    @property
    def last_day(self) -> dt.date:
        return self.end - dt.timedelta(days=1)

    @property
    def days(self) -> int:
        return (self.end - self.start).days

    @property
    def month_key(self) -> str:
        """``YYYY-MM`` of the first day: the name a statement URL uses."""
        return f"{self.start.year:04d}-{self.start.month:02d}"

    @property
    def label(self) -> str:
        if self.start.day == 1 and self.end.day == 1 and self.days >= 28 and self.days <= 31:
            return f"{MONTHS[self.start.month - 1]} {self.start.year}"
        same_year = self.start.year == self.last_day.year
        return f"{short_date(self.start, not same_year)} – {short_date(self.last_day, True)}"

    def contains(self, day: dt.date) -> bool:
        return self.start <= day < self.end


def _clamped(year: int, month: int, day: int) -> dt.date:
    return dt.date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _add_months(year: int, month: int, n: int) -> tuple[int, int]:
    total = year * 12 + (month - 1) + n
    return total // 12, total % 12 + 1


def next_reset(terms: Terms, after: dt.date) -> dt.date:
    """The first reset date strictly after ``after``."""
    return _next_reset(terms.start, terms.period, terms.reset_day, after)


def _next_reset(first: dt.date, kind: PeriodKind, reset_day: int, after: dt.date) -> dt.date:
    if kind is PeriodKind.WEEKLY:
        ahead = (reset_day - after.isoweekday()) % 7 or 7
        return after + dt.timedelta(days=ahead)
    step = 1 if kind is PeriodKind.MONTHLY else 3
    # Quarterly resets fall in the start month and every third month from it.
    offset = ((after.year * 12 + after.month - 1) - (first.year * 12 + first.month - 1)) % step
    year, month = _add_months(after.year, after.month, -offset)
    while True:
        candidate = _clamped(year, month, reset_day)
        if candidate > after:
            return candidate
        year, month = _add_months(year, month, step)


def periods_through(terms: Terms, last_day: dt.date) -> list[Period]:
    """Every period from the start up to the one containing ``last_day`` (at least one)."""
    return list(_periods(terms.start, terms.period, terms.reset_day, last_day))


@functools.lru_cache(maxsize=4096)
def _periods(start: dt.date, kind: PeriodKind, reset_day: int, last_day: dt.date) -> tuple[Period, ...]:
    """``periods_through`` for a period structure: kept, as every ledger, preview and watch of a
    retainer walks the same years of resets (a few dozen ``next_reset`` calls each) again and again."""
    first = start
    periods: list[Period] = []
    while True:
        end = _next_reset(first, kind, reset_day, start)
        periods.append(Period(len(periods), start, end))
        if end > last_day:
            return tuple(periods)
        start = end


def index_of(periods: list[Period], day: dt.date) -> int:
    """Index of the period containing ``day``; -1 before the first, len() after the last."""
    if day < periods[0].start:
        return -1
    if day >= periods[-1].end:
        return len(periods)
    return bisect.bisect_right([p.start for p in periods], day) - 1


def local_date(instant: dt.datetime, tz: ZoneInfo) -> dt.date:
    """The calendar date an aware instant falls on in ``tz``."""
    return instant.astimezone(tz).date()
