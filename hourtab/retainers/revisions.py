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
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import String, cast, func, insert, select
from sqlalchemy.orm import Session

from hourtab.retainers.days import local_days
from hourtab.retainers.ledger import Credit, Ledger
from hourtab.retainers.models import PeriodRevision, Retainer, RetainerCredit, RetainerTerms, retainer_entries
from hourtab.retainers.periods import index_of, local_date, periods_through
from hourtab.retainers.terms import Rounding, Terms
from hourtab.retainers.totals import DayTotals, day_totals, entry_totals, ledger_of_days, schedule_roundings
from hourtab.timesheets.models import TimeEntry

#: Retainer columns ``Retainer.terms()`` reads for hours (a revision is about hours, never money: the
#: money columns are left out, so this runs inside migrations older than them).
TERMS_COLUMNS = ("id", "account_id", "timezone", "allotment_s", "start_date", "period", "reset_day", "rollover",
                 "rollover_cap_s", "rollover_expiry_periods", "overage", "overage_rate", "rounding_min",
                 "rounding_mode", "minimum_min")
VERSION_COLUMNS = ("effective_from", "allotment_s", "rollover", "rollover_cap_s", "rollover_expiry_periods",
                   "overage", "overage_rate", "rounding_min", "rounding_mode", "minimum_min", "created_at")

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


def _retainer(session: Session, retainer_id: int) -> Retainer:
    """A detached ``Retainer`` carrying only its terms columns (enough for ``terms()``)."""
    row = session.execute(select(*(getattr(Retainer, c) for c in TERMS_COLUMNS))
                          .where(Retainer.id == retainer_id)).one()
    return Retainer(**dict(zip(TERMS_COLUMNS, row, strict=True)))


def _schedule(session: Session, retainer: Retainer) -> list[tuple[dt.date, Terms]]:
    base = retainer.terms()
    rows = session.execute(select(*(getattr(RetainerTerms, c) for c in VERSION_COLUMNS))
                           .where(RetainerTerms.retainer_id == retainer.id)
                           .order_by(RetainerTerms.effective_from)).all()
    versions = [RetainerTerms(**dict(zip(VERSION_COLUMNS, r, strict=True))) for r in rows]
    return [(v.effective_from, v.terms(base)) for v in versions] or [(base.start, base)]


def _credits(session: Session, retainer_id: int) -> list[Credit]:
    rows = session.execute(select(RetainerCredit.kind, RetainerCredit.on_date, RetainerCredit.seconds,
                                  RetainerCredit.reason, RetainerCredit.id)
                           .where(RetainerCredit.retainer_id == retainer_id)).all()
    return [Credit(*r) for r in rows]


def ledger_now(session: Session, retainer_id: int, now: dt.datetime) -> Ledger:
    """The retainer's ledger as of ``now``, from its day totals."""
    return ledgers_now(session, retainer_id, now)[0]


def ledgers_now(session: Session, retainer_id: int, now: dt.datetime,
                what_if: Callable[[DayTotals], DayTotals] | None = None) -> tuple[Ledger, Ledger, int]:
    """The retainer's ledger as of ``now``; the same with its totals changed by ``what_if`` (a
    preview's entries); and how many entries it counts. The totals are read once."""
    retainer = _retainer(session, retainer_id)
    terms, schedule = retainer.terms(), _schedule(session, retainer)
    totals = day_totals(session, retainer_id, schedule_roundings(terms, schedule))
    credits = _credits(session, retainer_id)
    ledger = ledger_of_days(terms, totals, credits, as_of=now, schedule=schedule)
    after = ledger if what_if is None else ledger_of_days(terms, what_if(totals), credits, as_of=now,
                                                          schedule=schedule)
    return ledger, after, totals.count


def closed(ledger: Ledger) -> Figures:
    return {p.period.start: (p.used_s, p.entry_count) for p in ledger.periods if not p.is_open}


def _reaches_closed(session: Session, retainer_id: int, now: dt.datetime, since: dt.date) -> bool:
    """Can a change to entries dated ``since`` or later touch a closed period of this retainer?"""
    terms = _retainer(session, retainer_id).terms()
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


def closed_figures(session: Session, retainer_id: int, now: dt.datetime, since: dt.date | None = None,
                   from_entries: bool = False) -> Figures:
    """The retainer's closed periods' figures, from its day totals; with ``since``, only the periods
    from the one containing it (a change dated ``since`` or later cannot move the earlier ones).

    ``from_entries``: for the data migrations older than ``retainer_entries.day``, which have no totals.
    """
    retainer = _retainer(session, retainer_id)
    terms, schedule = retainer.terms(), _schedule(session, retainer)
    first = None
    if since is not None and since > terms.start:
        periods = periods_through(terms, since)
        first = periods[min(index_of(periods, since), len(periods) - 1)].start
    roundings = schedule_roundings(terms, schedule)
    days = (_summed_here(session, retainer_id, terms, roundings) if from_entries
            else day_totals(session, retainer_id, roundings, since=first))
    figures = closed(ledger_of_days(terms, days, _credits(session, retainer_id), as_of=now, schedule=schedule))
    return {start: f for start, f in figures.items() if first is None or start >= first}


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
        seen = {rid for rid in seen if rid in terms_of or _reaches_closed(session, rid, now, since)}
    reads = {rid: None if rid in terms_of else since for rid in sorted(seen)}
    return {rid: (day, closed_figures(session, rid, now, day, from_entries)) for rid, day in reads.items()}


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
    for rid, (day, was) in before.items():
        if session.scalar(select(Retainer.id).where(Retainer.id == rid)) is None:
            continue  # deleted by the change itself
        changed = _changed_periods(was, closed_figures(session, rid, now, day, from_entries),
                                   _revised_starts(session, rid))
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
