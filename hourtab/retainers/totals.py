"""A ledger from day totals: one ``GROUP BY`` over ``(retainer_id, day)``, then arithmetic over periods.

The database sums a retainer's counted entries per local day (``days`` keeps that day beside each
assignment), rounding each entry in SQL by every rounding rule the retainer's terms versions use;
each day then takes the sum under its own period's rule. What reaches Python is a row per day with
entries, not a row per entry, so a ledger costs its days, and a change costs its own rows (routing
stores their days). ``ledger.build_ledger`` over the entries stays as the check in the tests.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import SQLColumnExpression, case, func, literal, select
from sqlalchemy.orm import Session

from hourtab.retainers.ledger import Credit, Ledger, period_balances, terms_for
from hourtab.retainers.models import retainer_entries
from hourtab.retainers.periods import index_of, local_date, periods_through
from hourtab.retainers.rounding import round_array
from hourtab.retainers.terms import Rounding, RoundingMode, Terms
from hourtab.timesheets.models import TimeEntry

#: Ids per ``IN (...)`` list: well under every backend's parameter limit.
CHUNK = 500


@dataclass(frozen=True)
class DayTotal:
    day: dt.date
    entries: int
    #: Seconds of the day's entries, each rounded by a rule, per rule.
    rounded_s: dict[Rounding, int]


def _rounded(duration: SQLColumnExpression[int], rounding: Rounding) -> SQLColumnExpression[int]:
    """``rounding.round_array`` as a SQL expression over integer seconds (``//`` is integer division
    on both backends; it only ever divides positive durations, where truncating is flooring)."""
    step = rounding.increment_min * 60
    value = duration
    if step:
        bump = step - 1 if rounding.mode is RoundingMode.UP else step // 2
        value = (duration + bump) // step * step
    least = rounding.minimum_min * 60
    if least:
        value = case((value < least, literal(least)), else_=value)
    return case((duration <= 0, literal(0)), else_=value)


def day_totals(session: Session, retainer_id: int, roundings: Sequence[Rounding],
               since: dt.date | None = None) -> list[DayTotal]:
    """The retainer's counted entries summed per local day (from ``since`` on), under each rule."""
    rules = list(dict.fromkeys(roundings))
    held, te = retainer_entries, TimeEntry
    stmt = (select(held.c.day, func.count(), *(func.sum(_rounded(te.duration_s, r)) for r in rules))
            .join(te, te.id == held.c.entry_id)
            .where(held.c.retainer_id == retainer_id, te.status != "removed")
            .group_by(held.c.day).order_by(held.c.day))
    if since is not None:
        stmt = stmt.where(held.c.day >= since)
    return [DayTotal(_date(row[0]), int(row[1]), {r: int(s) for r, s in zip(rules, row[2:], strict=True)})
            for row in session.connection().execute(stmt)]


def _date(value: object) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))


def schedule_roundings(terms: Terms, schedule: Sequence[tuple[dt.date, Terms]]) -> list[Rounding]:
    return list(dict.fromkeys([terms.rounding, *(t.rounding for _, t in schedule)]))


def ledger_of_days(terms: Terms, days: Sequence[DayTotal], credits: Sequence[Credit] = (),
                   as_of: dt.datetime | None = None, schedule: Sequence[tuple[dt.date, Terms]] = ()) -> Ledger:
    """``build_ledger``'s periods from day totals (its ``entries`` frames are left empty)."""
    as_of = as_of or dt.datetime.now(dt.UTC)
    schedule = tuple(sorted(schedule, key=lambda v: v[0])) or ((terms.start, terms),)
    today = local_date(as_of, terms.tz)
    last_day = max([today, *[c.on for c in credits], *[d.day for d in days[-1:]]])
    periods = periods_through(terms, last_day)
    period_terms = [terms_for(schedule, p.start) for p in periods]
    used, counts = [0] * len(periods), [0] * len(periods)
    for total in days:
        i = index_of(periods, total.day)
        if i >= 0:
            used[i] += total.rounded_s[period_terms[i].rounding]
            counts[i] += total.entries
    balances, current_index = period_balances(periods, period_terms, used, counts, credits, today)
    empty = pd.DataFrame()
    return Ledger(terms=period_terms[current_index], periods=balances, current_index=current_index, entries=empty,
                  before_start=empty, credits=tuple(sorted(credits, key=lambda c: (c.on, c.id or 0))),
                  schedule=schedule)


def held_durations(session: Session, retainer_id: int, entry_ids: Sequence[int]) -> list[tuple[dt.date, int]]:
    """``(day, seconds)`` of those of ``entry_ids`` the retainer counts now."""
    held, te = retainer_entries, TimeEntry
    ids = [int(i) for i in entry_ids]
    out: list[tuple[dt.date, int]] = []
    for k in range(0, len(ids), CHUNK):
        out += [(_date(d), int(s)) for d, s in session.connection().execute(
            select(held.c.day, te.duration_s).join(te, te.id == held.c.entry_id)
            .where(held.c.retainer_id == retainer_id, te.status != "removed", held.c.entry_id.in_(ids[k:k + CHUNK])))]
    return out


def what_if(days: Sequence[DayTotal], rules: Sequence[Rounding], leaving: Sequence[tuple[dt.date, int]],
            arriving: Sequence[tuple[dt.date, int]]) -> list[DayTotal]:
    """The day totals with the ``(day, seconds)`` entries leaving taken out and those arriving added:
    a preview's "after" without reading the history again."""
    counts = {d.day: d.entries for d in days}
    sums = {d.day: dict(d.rounded_s) for d in days}
    for sign, entries in ((-1, leaving), (1, arriving)):
        seconds = np.array([s for _, s in entries], dtype=np.int64)
        rounded = {rule: round_array(seconds, rule).tolist() for rule in rules}
        for k, (day, _) in enumerate(entries):
            counts[day] = counts.get(day, 0) + sign
            of_day = sums.setdefault(day, dict.fromkeys(rules, 0))
            for rule in rules:
                of_day[rule] += sign * rounded[rule][k]
    return [DayTotal(day, counts[day], sums[day]) for day in sorted(counts)]
