"""A ledger from day totals: one ``GROUP BY`` over ``(retainer_id, day)``, then arithmetic over periods.

The database sums a retainer's counted entries per local day (``days`` keeps that day beside each
assignment), rounding each entry in SQL by every rounding rule the retainer's terms versions use;
each day then takes the sum under its own period's rule. What reaches Python is a row per day with
entries, not a row per entry, so a ledger costs its days, and a change costs its own rows (routing
stores their days). Every reader of figures reads them here: the pages, JSON, CSV, statements, feed,
alerts, invoices, the import preview and the revision watch; those that list entries read only the
periods they show (``with_entries``). ``build_ledger`` over every entry is the check, in the tests.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from sqlalchemy import Date, SQLColumnExpression, case, func, literal, select
from sqlalchemy.orm import Session

from hourtab.core.db import columns
from hourtab.retainers.counted_entries import entries_on_days
from hourtab.retainers.ledger import Credit, Ledger, empty_entries, period_balances, placed, terms_for
from hourtab.retainers.models import retainer_day_totals, retainer_entries, retainer_total_rules
from hourtab.retainers.periods import local_date, periods_through
from hourtab.retainers.rounding import round_array
from hourtab.retainers.terms import Rounding, RoundingMode, Terms
from hourtab.timesheets.models import TimeEntry

#: Ids per ``IN (...)`` list: well under every backend's parameter limit.
CHUNK = 500


@dataclass(frozen=True)
class DayTotals:
    """Counted entries summed per local day: one array element a day (a day may repeat: sums add)."""

    days: np.ndarray  # datetime64[D]
    entries: np.ndarray  # int64
    #: Seconds of each day's entries, each rounded by a rule, per rule.
    rounded_s: dict[Rounding, np.ndarray]

    def where(self, mask: np.ndarray) -> DayTotals:
        """The elements ``mask`` keeps."""
        return DayTotals(self.days[mask], self.entries[mask], {r: sums[mask] for r, sums in self.rounded_s.items()})

    @property
    def count(self) -> int:
        return int(self.entries.sum())

    def plus(self, days: Sequence[dt.date], seconds: Sequence[int], sign: int) -> DayTotals:
        """These totals with entries of ``seconds`` on ``days`` added (``sign`` 1) or taken out (-1)."""
        more = entry_totals(days, seconds, list(self.rounded_s), sign)
        return DayTotals(np.concatenate([self.days, more.days]), np.concatenate([self.entries, more.entries]),
                         {rule: np.concatenate([sums, more.rounded_s[rule]]) for rule, sums in self.rounded_s.items()})


def entry_totals(days: Sequence[dt.date], seconds: Sequence[int], roundings: Sequence[Rounding],
                 sign: int = 1) -> DayTotals:
    """Entries of ``seconds`` on ``days`` as totals, one element an entry (``sign`` -1: taken out)."""
    durations = np.asarray(seconds, dtype=np.int64)
    return DayTotals(np.array(days, dtype="datetime64[D]"), np.full(len(durations), sign, dtype=np.int64),
                     {rule: sign * round_array(durations, rule) for rule in dict.fromkeys(roundings)})


def rounded_in_sql(duration: SQLColumnExpression[int], rounding: Rounding) -> SQLColumnExpression[int]:
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
               since: dt.date | None = None) -> DayTotals:
    """The retainer's counted entries summed per local day (from ``since`` on), under each rule: read
    from the kept totals (``kept_totals``), or summed from the entries where a rule is not kept."""
    return day_totals_of(session, {retainer_id: (roundings, since)})[retainer_id]


def day_totals_of(session: Session, wanted: Mapping[int, tuple[Sequence[Rounding], dt.date | None]],
                  folds: Mapping[int, Sequence[dt.date]] | None = None) -> dict[int, DayTotals]:
    """``day_totals`` of several retainers, ``{retainer_id: (rules, since)}``: two queries for all
    those whose rules are kept (one more for each other period structure in ``folds``).

    ``folds``: a retainer's period starts up to its current period's: the days of each closed period
    come summed as one element on its first day, so a ledger reads a row a period, not a day
    (the ledger is the same: it only sums each period's days).
    """
    rules = {rid: list(dict.fromkeys(roundings)) for rid, (roundings, _) in wanted.items()}
    keys = sorted({r.key for wanted_rules in rules.values() for r in wanted_rules})
    kept: dict[int, set[str]] = {}
    for rid, key in session.execute(select(retainer_total_rules.c.retainer_id, retainer_total_rules.c.rule).where(
            retainer_total_rules.c.retainer_id.in_(list(wanted)), retainer_total_rules.c.rule.in_(keys))):
        kept.setdefault(int(rid), set()).add(key)
    groups: dict[tuple[tuple[dt.date, ...], dt.date | None], dict[int, list[Rounding]]] = {}
    for rid in wanted:
        if {r.key for r in rules[rid]} <= kept.get(rid, set()):
            groups.setdefault((tuple((folds or {}).get(rid, ())), wanted[rid][1]), {})[rid] = rules[rid]
    out: dict[int, DayTotals] = {}
    for (starts, since), rules_of in groups.items():
        out.update(_kept_rows(session, rules_of, starts, since))
    for rid in set(wanted) - set(out):  # a rule not kept (yet): summed from the entries
        out[rid] = _read_totals(session, rid, rules[rid], wanted[rid][1])[0]
    return out


def _kept_rows(session: Session, rules_of: dict[int, list[Rounding]], starts: tuple[dt.date, ...],
               since: dt.date | None) -> dict[int, DayTotals]:
    """The kept totals of retainers that share a period structure, each closed period folded into one row."""
    table = retainer_day_totals
    keys = sorted({r.key for rules in rules_of.values() for r in rules})
    rows = (select(table.c.retainer_id, table.c.rule, _folded(table.c.day, starts).label("day"), table.c.entries,
                   table.c.rounded_s)
            .where(table.c.retainer_id.in_(list(rules_of)), table.c.rule.in_(keys)))
    if since is not None:
        rows = rows.where(table.c.day >= since)
    part = rows.subquery()
    stmt = (select(part.c.retainer_id, part.c.rule, part.c.day, func.sum(part.c.entries), func.sum(part.c.rounded_s))
            .group_by(part.c.retainer_id, part.c.rule, part.c.day)
            .order_by(part.c.retainer_id, part.c.rule, part.c.day))
    found = columns(session, stmt, ["retainer_id", "rule", "day", "entries", "rounded_s"])
    ids = np.array(found["retainer_id"], dtype=np.int64)
    rule_keys = np.array(found["rule"], dtype=object)
    # SQLite answers dates as ISO text, PostgreSQL as dates: numpy reads both as days.
    days = np.array([str(d) for d in found["day"]], dtype="datetime64[D]")
    entries, seconds = np.array(found["entries"], dtype=np.int64), np.array(found["rounded_s"], dtype=np.int64)
    out = {}
    for rid, rules in rules_of.items():
        mine = ids == rid
        # Every kept rule has a row for each day with a counted entry (they are summed together).
        first = mine & (rule_keys == rules[0].key)
        out[rid] = DayTotals(days[first], entries[first], {r: seconds[mine & (rule_keys == r.key)] for r in rules})
    return out


def _folded(day: SQLColumnExpression[dt.date], starts: Sequence[dt.date]) -> SQLColumnExpression[dt.date]:
    """``day``, or the start of the period ``starts`` it falls in where that is not the last (a closed one).

    A search tree of ``CASE``s: the database compares each row about log2(periods) times, not once a
    period (three years of weeks are 156 of them).
    """
    if len(starts) < 2:
        return day
    return case((day < starts[0], day), (day >= starts[-1], day), else_=_period_start(day, list(starts)))


def _period_start(day: SQLColumnExpression[dt.date], starts: list[dt.date]) -> SQLColumnExpression[dt.date]:
    """The last of ``starts`` on or before ``day``, for a day from ``starts[0]`` to before ``starts[-1]``."""
    if len(starts) == 2:
        return literal(starts[0], Date)
    middle = len(starts) // 2
    return case((day < starts[middle], _period_start(day, starts[:middle + 1])),
                else_=_period_start(day, starts[middle:]))


def summed_day_totals(session: Session, retainer_id: int, roundings: Sequence[Rounding]) -> DayTotals:
    """``day_totals`` summed from the entries themselves, never the kept totals (what those are checked against)."""
    return _read_totals(session, retainer_id, roundings, None)[0]


def upload_day_totals(session: Session, retainer_id: int,
                      roundings: Sequence[Rounding]) -> tuple[DayTotals, np.ndarray]:
    """``day_totals`` per day and import, with each element's upload id (0: no import brought them)."""
    return _read_totals(session, retainer_id, roundings, None, by_upload=True)


def _read_totals(session: Session, retainer_id: int, roundings: Sequence[Rounding], since: dt.date | None,
                 by_upload: bool = False) -> tuple[DayTotals, np.ndarray]:
    rules = list(dict.fromkeys(roundings))
    held, te = retainer_entries, TimeEntry
    upload = func.coalesce(te.upload_id, 0)
    keys = [held.c.day, upload] if by_upload else [held.c.day]
    names = ["day", *(["upload"] if by_upload else []), "entries", *(str(k) for k in range(len(rules)))]
    stmt = (select(*keys, func.count(), *(func.sum(rounded_in_sql(te.duration_s, r)) for r in rules))
            .join(te, te.id == held.c.entry_id)
            .where(held.c.retainer_id == retainer_id, te.status != "removed")
            .group_by(*keys))
    if since is not None:
        stmt = stmt.where(held.c.day >= since)
    found = columns(session, stmt, names)
    # SQLite answers dates as ISO text, PostgreSQL as dates: numpy reads both as days.
    totals = DayTotals(np.array([str(d) for d in found["day"]], dtype="datetime64[D]"),
                       np.array(found["entries"], dtype=np.int64),
                       {r: np.array(found[str(k)], dtype=np.int64) for k, r in enumerate(rules)})
    return totals, np.array(found.get("upload", ()), dtype=np.int64)


def schedule_roundings(terms: Terms, schedule: Sequence[tuple[dt.date, Terms]]) -> list[Rounding]:
    return list(dict.fromkeys([terms.rounding, *(t.rounding for _, t in schedule)]))


def ledger_of_days(terms: Terms, totals: DayTotals, credits: Sequence[Credit] = (),
                   as_of: dt.datetime | None = None, schedule: Sequence[tuple[dt.date, Terms]] = ()) -> Ledger:
    """The ledger's periods from day totals (it holds no entries: see ``with_entries``)."""
    as_of = as_of or dt.datetime.now(dt.UTC)
    schedule = tuple(sorted(schedule, key=lambda v: v[0])) or ((terms.start, terms),)
    today = local_date(as_of, terms.tz)
    last_day = max([today, *[c.on for c in credits]])
    if len(totals.days):
        last_day = max(last_day, totals.days.max().astype(dt.date))
    periods = periods_through(terms, last_day)
    period_terms = [terms_for(schedule, p.start) for p in periods]
    starts = np.array([p.start for p in periods], dtype="datetime64[D]")
    index = np.searchsorted(starts, totals.days, side="right") - 1
    counted = index >= 0  # days before the start count nowhere
    used = np.zeros(len(periods), dtype=np.int64)
    for rule in {t.rounding for t in period_terms}:
        mine = counted & np.isin(index, [i for i, t in enumerate(period_terms) if t.rounding == rule])
        np.add.at(used, index[mine], totals.rounded_s[rule][mine])
    counts = np.zeros(len(periods), dtype=np.int64)
    np.add.at(counts, index[counted], totals.entries[counted])
    balances, current_index = period_balances(periods, period_terms, used.tolist(), counts.tolist(), credits, today)
    return Ledger(terms=period_terms[current_index], periods=balances, current_index=current_index,
                  entries=_no_entries(), before_start=_no_entries(),
                  credits=tuple(sorted(credits, key=lambda c: (c.on, c.id or 0))), schedule=schedule,
                  before_count=int(totals.entries[~counted].sum()))


@functools.cache
def _no_entries() -> pd.DataFrame:
    """A ledger's entries when its reader asked for none: built once (3 ms of pandas) and shared,
    as readers only select from it."""
    return empty_entries().assign(day=pd.Series(dtype="datetime64[ns]"), period=pd.Series(dtype="int64"),
                                  rounded_s=pd.Series(dtype="int64"))


#: Which periods' entries a reader needs besides the figures (a ledger's indices of them).
Pick = Callable[[Ledger], Iterable[int]]


def no_periods(ledger: Ledger) -> range:
    return range(0)


def all_periods(ledger: Ledger) -> range:
    return range(len(ledger.periods))


def current_period(ledger: Ledger) -> list[int]:
    return [ledger.current_index]


def latest_periods(count: int) -> Pick:
    """The fewest latest periods that hold ``count`` entries (all of them, if fewer)."""
    def pick(ledger: Ledger) -> range:
        first, held = len(ledger.periods), 0
        while first > 0 and held < count:
            first -= 1
            held += ledger.periods[first].entry_count
        return range(first, len(ledger.periods))
    return pick


def with_entries(session: Session, ledger: Ledger, retainer_id: int, indices: Iterable[int],
                 text: bool = True) -> Ledger:
    """``ledger`` holding the entries of the periods ``indices`` (placed and rounded as a ledger lists them), read
    by their stored days: a ranged read for each run of consecutive periods."""
    wanted = sorted(set(indices))
    if not wanted:
        return ledger
    spans: list[tuple[dt.date, dt.date | None]] = []
    for i in wanted:
        end = None if i == len(ledger.periods) - 1 else ledger.periods[i].period.end
        if spans and spans[-1][1] == ledger.periods[i].period.start:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((ledger.periods[i].period.start, end))
    periods = [b.period for b in ledger.periods]
    frame = entries_on_days(session, retainer_id, spans, text)
    return replace(ledger, entries=placed(frame, periods, [terms_for(ledger.schedule, p.start) for p in periods]))


def held_durations(session: Session, entry_ids: Sequence[int]) -> dict[int, tuple[list[dt.date], list[int]]]:
    """Days and seconds of those of ``entry_ids`` a retainer counts now, per retainer id."""
    held, te = retainer_entries, TimeEntry
    ids = sorted({int(i) for i in entry_ids})
    out: dict[int, tuple[list[dt.date], list[int]]] = {}
    for k in range(0, len(ids), CHUNK):
        for rid, d, s in session.connection().execute(
                select(held.c.retainer_id, held.c.day, te.duration_s).join(te, te.id == held.c.entry_id)
                .where(te.status != "removed", held.c.entry_id.in_(ids[k:k + CHUNK]))):
            days, seconds = out.setdefault(int(rid), ([], []))
            days.append(d if isinstance(d, dt.date) else dt.date.fromisoformat(str(d)))
            seconds.append(int(s))
    return out
