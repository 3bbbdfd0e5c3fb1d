"""Revisions of closed periods: a change to a period that already closed is recorded, never silent.

A period's figures can still change after its reset: an entry in it is removed or restored, a late
import brings entries dated in it, or a rule change sends entries to another retainer. Each such
change wraps its writes in ``watch_closed_periods``: the used hours of every closed period are
taken before and after, and each period whose figures moved gets a ``PeriodRevision`` row with the
figure it had (``was``). The page says "revised on DATE (was X h)", the JSON carries it, the
statement gets a revision number, the feed an item. History is recorded, not recomputed away.

Revisions go both ways: a period whose figure drops and later comes back gets a revision each
time, so a period's last revision always states the figure it shows. A retainer that never
counted an entry (and was never revised) has nothing to revise: its history is being loaded
(the first import after creating it), not changed under a client's eyes.

Reads name their columns (see ``assign``), so the data migration can run this code as well.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import String, cast, func, insert, select
from sqlalchemy.orm import Session

from hourtab.retainers.days import local_days
from hourtab.retainers.ledger import Ledger
from hourtab.retainers.ledger_inputs import ledger_inputs
from hourtab.retainers.models import PeriodRevision, Retainer, retainer_entries
from hourtab.retainers.periods import index_of, local_date, periods_through
from hourtab.retainers.terms import Rounding, Terms
from hourtab.retainers.totals import DayTotals, day_totals_of, entry_totals
from hourtab.timesheets.models import TimeEntry

#: ``{period start: (used seconds, entries)}`` of one retainer's closed periods.
Figures = dict[dt.date, tuple[int, int]]


@dataclass(frozen=True)
class Revision:
    """One recorded revision, as the page, the JSON, the statement and the feed show it."""

    number: int
    at: dt.datetime
    on: dt.date  # ``at`` as a local date in the retainer's zone
    was_used_s: int
    used_s: int
    was_entries: int
    entries: int
    reason: str


def ledger_now(session: Session, retainer_id: int, now: dt.datetime) -> Ledger:
    """The retainer's ledger as of ``now``, from its day totals."""
    inputs = ledger_inputs(session, [retainer_id])[retainer_id]
    totals = day_totals_of(session, {retainer_id: (inputs.roundings, None)}, {retainer_id: inputs.folds(now)})
    return inputs.ledger(totals[retainer_id], now)


def ledgers_now(session: Session, retainer_ids: Iterable[int], now: dt.datetime,
                what_if: Mapping[int, Callable[[DayTotals], DayTotals]] | None = None) -> dict[int, tuple[Ledger, Ledger, int]]:
    """Per retainer: its ledger as of ``now``; the same with its totals changed by ``what_if[id]`` (a
    preview's entries; the same ledger where none); and how many entries it counts. The inputs and
    totals of all of them are read at once."""
    inputs = ledger_inputs(session, retainer_ids)
    totals = day_totals_of(session, {rid: (i.roundings, None) for rid, i in inputs.items()},
                           {rid: i.folds(now) for rid, i in inputs.items()})
    out = {}
    for rid, i in inputs.items():
        ledger = i.ledger(totals[rid], now)
        change = (what_if or {}).get(rid)
        out[rid] = (ledger, ledger if change is None else i.ledger(change(totals[rid]), now), totals[rid].count)
    return out


def closed(ledger: Ledger) -> Figures:
    return {p.period.start: (p.used_s, p.entry_count) for p in ledger.periods if not p.is_open}


def _reaches_closed(terms: Terms, now: dt.datetime, since: dt.date) -> bool:
    """Can a change to entries dated ``since`` or later touch a closed period of a retainer with these terms?"""
    today = local_date(now, terms.tz)
    periods = periods_through(terms, today)
    return since < periods[max(index_of(periods, today), 0)].start


def record_revision(session: Session, *, account_id: int, retainer_id: int, period_start: dt.date,
                    was: tuple[int, int], now: tuple[int, int], reason: str, at: dt.datetime | None = None,
                    upload_id: int | None = None) -> int:
    """Record that a closed period's (used seconds, entries) went from ``was`` to ``now``; its number.

    For callers that change entries outside ``watch_closed_periods`` (a live tracker sync that
    computes its own figures). Never commits.
    """
    number = (session.scalar(select(func.max(PeriodRevision.number)).where(
        PeriodRevision.retainer_id == retainer_id, PeriodRevision.period_start == period_start)) or 0) + 1
    session.execute(insert(PeriodRevision).values(
        account_id=account_id, retainer_id=retainer_id, period_start=period_start, number=number,
        revised_at=at or dt.datetime.now(dt.UTC), was_used_s=was[0], used_s=now[0], was_entries=was[1],
        entries=now[1], reason=reason, upload_id=upload_id))
    return number


@dataclass(frozen=True)
class Recorded:
    """A revision a watch recorded: which closed period, and its (used seconds, entries) before and after."""

    retainer_id: int
    period_start: dt.date
    was: tuple[int, int]
    now: tuple[int, int]


class Revised(list[int]):
    """The ids of the retainers a watch revised (in order), and what it recorded for each period."""

    def __init__(self) -> None:
        super().__init__()
        self.recorded: list[Recorded] = []


def revised_retainers(session: Session, account_id: int) -> set[int]:
    """Retainers of the account that already have a revision: a client has seen their figures."""
    return set(session.scalars(select(PeriodRevision.retainer_id).distinct()
                               .where(PeriodRevision.account_id == account_id)))


def counting_retainers(session: Session, account_id: int) -> set[int]:
    """Retainers of the account that count at least one entry (an index probe each, not a scan)."""
    te, held = TimeEntry, retainer_entries
    counts = (select(held.c.entry_id).join(te, te.id == held.c.entry_id)
              .where(held.c.retainer_id == Retainer.id, te.status != "removed").exists())
    return set(session.scalars(select(Retainer.id).where(Retainer.account_id == account_id, counts)))


def closed_figures_of(session: Session, reads: Mapping[int, dt.date | None], now: dt.datetime,
                      from_entries: bool = False) -> dict[int, Figures]:
    """Each retainer's closed periods' figures, from its day totals, ``{retainer_id: since}``; with a
    ``since``, only the periods from the one containing it (a change dated ``since`` or later cannot
    move the earlier ones). A deleted retainer is left out.

    ``from_entries``: for the data migrations older than ``retainer_entries.day``, which have no totals.
    """
    inputs = ledger_inputs(session, reads)
    firsts = {rid: _first_period(i.terms, reads[rid]) for rid, i in inputs.items()}
    if from_entries:
        totals = {rid: _summed_here(session, rid, i.terms, i.roundings) for rid, i in inputs.items()}
    else:
        totals = day_totals_of(session, {rid: (i.roundings, firsts[rid]) for rid, i in inputs.items()},
                               {rid: i.folds(now) for rid, i in inputs.items()})
    out = {}
    for rid, i in inputs.items():
        first = firsts[rid]
        out[rid] = {start: f for start, f in closed(i.ledger(totals[rid], now)).items() if first is None or start >= first}
    return out


def _first_period(terms: Terms, since: dt.date | None) -> dt.date | None:
    """The start of the period containing ``since`` (``None``: from the retainer's start)."""
    if since is None or since <= terms.start:
        return None
    periods = periods_through(terms, since)
    return periods[min(index_of(periods, since), len(periods) - 1)].start


def _summed_here(session: Session, retainer_id: int, terms: Terms, roundings: list[Rounding]) -> DayTotals:
    """The retainer's day totals summed here, each entry's day computed as routing stores it: for
    the data migrations older than ``retainer_entries.day``, which have no stored days to group by."""
    te, held = TimeEntry, retainer_entries
    rows = session.execute(select(cast(te.start_at, String), cast(te.local_date, String), te.duration_s)
                           .join(held, held.c.entry_id == te.id)
                           .where(held.c.retainer_id == retainer_id, te.status != "removed")).all()
    starts, dates, seconds = zip(*rows, strict=True) if rows else ((), (), ())
    return entry_totals(local_days(starts, dates, terms.timezone) if rows else [], seconds, roundings)


def _seen(session: Session, account_id: int, now: dt.datetime, since: dt.date | None,
          terms_of: frozenset[int], from_entries: bool,
          only: frozenset[int] | None) -> dict[int, tuple[dt.date | None, Figures]]:
    """Before a change: the closed figures of every retainer a client has seen that it can touch,
    with the day they were read from.

    Seen: it counts entries now, or a period of it was revised before (it counted some once; a
    retainer that never counted any is loading its history, not changing it). A retainer whose
    terms the change may alter is read whole, under the terms it has before the change.
    """
    seen = counting_retainers(session, account_id) | revised_retainers(session, account_id)
    if only is not None:
        seen &= only
    if since is not None:
        terms = {rid: i.terms for rid, i in ledger_inputs(session, seen - terms_of).items()}
        seen = {rid for rid in seen if rid in terms_of or _reaches_closed(terms[rid], now, since)}
    reads = {rid: None if rid in terms_of else since for rid in sorted(seen)}
    figures = closed_figures_of(session, reads, now, from_entries)
    return {rid: (reads[rid], figures[rid]) for rid in figures}


def _changed_periods(was: Figures, now: Figures, revised_before: set[dt.date]) -> list[tuple[dt.date, tuple, tuple]]:
    """(start, was, now) of each closed period whose figures moved.

    A period that is no longer one (the period structure changed) now stands at nothing; one that
    appears is a change only where it was revised before (it is coming back).
    """
    out = []
    for start in sorted(set(was) | set(now)):
        old, new = was.get(start, (0, 0)), now.get(start, (0, 0))
        if old != new and (start in was or start in revised_before):
            out.append((start, old, new))
    return out


def _revised_starts(session: Session, retainer_id: int) -> set[dt.date]:
    return set(session.scalars(select(PeriodRevision.period_start).distinct()
                               .where(PeriodRevision.retainer_id == retainer_id)))


@contextmanager
def watch_closed_periods(session: Session, account_id: int, reason: str, *, since: dt.date | None = None,
                         now: dt.datetime | None = None, upload_id: int | None = None,
                         terms_of: Iterable[int] = (), from_entries: bool = False,
                         only: Iterable[int] | None = None) -> Iterator[Revised]:
    """Record a revision for every closed period whose figures the enclosed change alters, up or down.

    ``since``: the earliest date the change can touch (give one day of margin: a tracker's local
    date can be a day off the retainer's); ``None`` = anything (rule changes). ``terms_of``: the
    retainers whose terms (period structure) the change may alter: their figures are taken before
    the change, under the terms they had. ``only``: the retainers the change can touch at all (a
    terms edit that moves no entry touches its own retainer). Yields the ``Revised`` list of
    revised retainer ids.

    Each seen retainer's closed figures are read from its day totals before and after, from the
    period containing ``since`` on: the cost is the days the change can reach, not the history.
    """

    now = now or dt.datetime.now(dt.UTC)
    session.flush()
    before = _seen(session, account_id, now, since, frozenset(int(i) for i in terms_of), from_entries,
                   None if only is None else frozenset(int(i) for i in only))
    revised = Revised()
    yield revised
    if not before:
        return
    session.flush()
    after = closed_figures_of(session, {rid: day for rid, (day, _) in before.items()}, now, from_entries)
    for rid, (_, was) in before.items():
        if rid not in after:
            continue  # deleted by the change itself
        changed = _changed_periods(was, after[rid], _revised_starts(session, rid))
        for start, old, new in changed:
            record_revision(session, account_id=account_id, retainer_id=rid, period_start=start, was=old,
                            now=new, reason=reason, at=now, upload_id=upload_id)
            revised.recorded.append(Recorded(rid, start, old, new))
        if changed and rid not in revised:
            revised.append(rid)
    session.flush()


def revisions_of(session: Session, retainer: Retainer) -> dict[dt.date, tuple[Revision, ...]]:
    """Every revision of the retainer's periods, oldest first, by period start."""
    tz = retainer.terms().tz
    rows = session.scalars(select(PeriodRevision).where(PeriodRevision.retainer_id == retainer.id)
                           .order_by(PeriodRevision.period_start, PeriodRevision.number))
    found: dict[dt.date, list[Revision]] = {}
    for r in rows:
        found.setdefault(r.period_start, []).append(Revision(
            number=r.number, at=r.revised_at, on=r.revised_at.astimezone(tz).date(), was_used_s=r.was_used_s,
            used_s=r.used_s, was_entries=r.was_entries, entries=r.entries, reason=r.reason))
    return {start: tuple(items) for start, items in found.items()}
