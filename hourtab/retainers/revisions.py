"""Revisions of closed periods: a change to a period that already closed is recorded, never silent.

A period's figures can still change after its reset: an entry in it is removed or restored, a late
import brings entries dated in it, or a rule change sends entries to another retainer. Each such
change wraps its writes in ``watch_closed_periods``: the used hours of every closed period are
taken before and after, and each period whose figures moved gets a ``PeriodRevision`` row with the
figure it had (``was``). The page says "revised on DATE (was X h)", the JSON carries it, the
statement gets a revision number, the feed an item. History is recorded, not recomputed away.

A retainer that counted no entries before the change has nothing to revise: its history is being
loaded (the first import after creating it), not changed under a client's eyes.

Reads name their columns (see ``assign``), so the data migration can run this code as well.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from hourtab.retainers.frames import entries_frame, held_frames
from hourtab.retainers.ledger import Credit, Ledger, build_ledger
from hourtab.retainers.models import PeriodRevision, Retainer, RetainerCredit, RetainerTerms
from hourtab.retainers.periods import index_of, local_date, periods_through

#: Retainer columns ``Retainer.terms()`` reads.
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


def _schedule(session: Session, retainer: Retainer):
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


def ledger_now(session: Session, retainer_id: int, now: dt.datetime, entries=None) -> Ledger:
    """The retainer's ledger as of ``now`` (``entries``: another frame of entries, for a what-if)."""

    retainer = _retainer(session, retainer_id)
    frame = entries_frame(session, retainer_id, text=False) if entries is None else entries
    return build_ledger(retainer.terms(), frame, _credits(session, retainer_id), as_of=now,
                        schedule=_schedule(session, retainer))


def closed(ledger: Ledger) -> Figures:
    return {p.period.start: (p.used_s, p.entry_count) for p in ledger.periods if not p.is_open}


def _reaches_closed(session: Session, retainer_id: int, now: dt.datetime, since: dt.date) -> bool:
    """Can a change to entries dated ``since`` or later touch a closed period of this retainer?"""
    terms = _retainer(session, retainer_id).terms()
    today = local_date(now, terms.tz)
    periods = periods_through(terms, today)
    return since < periods[max(index_of(periods, today), 0)].start


def _same(a, b) -> bool:
    """Do two frames of counted entries (sorted by id) hold the same entries with the same figures?"""
    if len(a) != len(b):
        return False
    return all(a[c].reset_index(drop=True).equals(b[c].reset_index(drop=True))
               for c in ("entry_id", "start_at", "local_date", "duration_s"))


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


@contextmanager
def watch_closed_periods(session: Session, account_id: int, reason: str, *, since: dt.date | None = None,
                         now: dt.datetime | None = None, upload_id: int | None = None) -> Iterator[list[int]]:
    """Record a revision for every closed period whose figures the enclosed change alters.

    ``since``: the earliest date the change can touch (give one day of margin: a tracker's local
    date can be a day off the retainer's); ``None`` = anything (rule changes). Yields the list the
    ids of the revised retainers are appended to.

    The account's counted entries are read once before and once after; only a retainer whose
    entries differ gets its ledger built, from the saved entries and from the new ones (its terms
    and credits do not change inside the watch).
    """

    now = now or dt.datetime.now(dt.UTC)
    session.flush()
    before = held_frames(session, account_id)
    if since is not None:
        before = {rid: f for rid, f in before.items() if _reaches_closed(session, rid, now, since)}
    revised: list[int] = []
    yield revised
    if not before:
        return
    session.flush()
    after = held_frames(session, account_id)
    for rid, was_entries in before.items():
        now_entries = after.get(rid)
        if now_entries is not None and _same(was_entries, now_entries):
            continue
        if session.scalar(select(Retainer.id).where(Retainer.id == rid)) is None:
            continue  # deleted by the change itself
        was = closed(ledger_now(session, rid, now, was_entries))
        figures = closed(ledger_now(session, rid, now, now_entries if now_entries is not None else was_entries.iloc[0:0]))
        for start, old in sorted(was.items()):
            if start in figures and figures[start] != old:
                record_revision(session, account_id=account_id, retainer_id=rid, period_start=start, was=old,
                                now=figures[start], reason=reason, at=now, upload_id=upload_id)
                if rid not in revised:
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
