"""Effective-dated terms: which version of a retainer's terms each period runs under.

A version carries what a period grants and how it closes (hours, rollover, overage, rounding) and
applies from the first day of a period on. A change made today applies from the current period
(or a later one the consultant picks); periods that already closed keep the terms they closed
with, so a statement once sent never changes because the terms did.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.retainers.models import Retainer, RetainerTerms
from hourtab.retainers.periods import Period, index_of, periods_through
from hourtab.retainers.terms import InvalidTerms, Terms

#: The figures a terms version carries; the rest of ``Terms`` is the retainer's period structure.
VERSIONED = ("allotment_s", "rollover", "rollover_cap_s", "rollover_expiry_periods", "overage", "overage_rate",
             "fee", "currency", "hourly_rate")


def _version_values(terms: Terms) -> dict:
    values = {name: getattr(terms, name) for name in VERSIONED}
    values["rollover"], values["overage"] = terms.rollover.value, terms.overage.value
    values.update(rounding_min=terms.rounding.increment_min, rounding_mode=terms.rounding.mode.value,
                  minimum_min=terms.rounding.minimum_min)
    return values


def terms_versions(session: Session, retainer: Retainer) -> list[RetainerTerms]:
    return list(session.scalars(select(RetainerTerms).where(RetainerTerms.retainer_id == retainer.id)
                                .order_by(RetainerTerms.effective_from)))


def terms_schedule(session: Session, retainer: Retainer,
                   known_at: dt.datetime | None = None) -> list[tuple[dt.date, Terms]]:
    """(first day, terms) per version, oldest first, on the retainer's current period structure.

    ``known_at``: only the versions made by then (the first one always), for figures as they stood.
    """
    base = retainer.terms()
    versions = terms_versions(session, retainer)
    if known_at is not None:
        versions = [v for v in versions if v.created_at <= known_at] or versions[:1]
    return [(v.effective_from, v.terms(base)) for v in versions] or [(base.start, base)]


def add_version(session: Session, retainer: Retainer, terms: Terms, effective_from: dt.date,
                created_at: dt.datetime | None = None) -> None:
    """``created_at``: the retainer's own for the terms it is created with (the feed tells them apart)."""
    extra = {"created_at": created_at} if created_at is not None else {}
    session.add(RetainerTerms(account_id=retainer.account_id, retainer_id=retainer.id,
                              effective_from=effective_from, **_version_values(terms), **extra))


def schedule_change(session: Session, retainer: Retainer, terms: Terms, effective_from: dt.date | None,
                     today: dt.date) -> None:
    """Apply ``terms``' figures from the period containing ``effective_from`` (default: today's).

    Closed periods keep the terms they closed with, so a period before today's is refused.
    Only a version starting in the chosen period is replaced (that is the one being edited);
    versions scheduled for later periods are kept, never dropped silently.
    """
    periods = periods_through(terms, max(today, effective_from or today))
    current = periods[max(index_of(periods, today), 0)]
    chosen = current if effective_from is None else periods[max(index_of(periods, effective_from), 0)]
    if chosen.start < current.start:
        raise InvalidTerms(f"The period of {chosen.label} is closed and keeps the terms it closed with; "
                           f"apply the change from {current.label} or later.")
    schedule = terms_schedule(session, retainer)
    in_force = [t for start, t in schedule if start <= chosen.start] or [schedule[0][1]]
    if _version_values(in_force[-1]) == _version_values(terms):
        return
    mine = [v for v in terms_versions(session, retainer) if chosen.start <= v.effective_from < chosen.end]
    earlier = [t for start, t in schedule if start < chosen.start]
    for version in mine:
        session.delete(version)
    session.flush()
    # Back to the terms the period had before its own version: that version goes, none is added
    # (an edit and its undo leave the history as it was).
    if not (mine and earlier and _version_values(earlier[-1]) == _version_values(terms)):
        add_version(session, retainer, terms, chosen.start)


def in_force(session: Session, retainer: Retainer, day: dt.date) -> Terms:
    """The terms version that applies on ``day`` (what an edit of that period starts from)."""
    schedule = terms_schedule(session, retainer)
    return ([t for start, t in schedule if start <= day] or [schedule[0][1]])[-1]


def scheduled_after(session: Session, retainer: Retainer, day: dt.date) -> list[tuple[dt.date, Terms]]:
    """Versions that start after ``day``: kept by an edit of the period containing ``day``."""
    return [(start, t) for start, t in terms_schedule(session, retainer) if start > day]


def change_periods(retainer: Retainer, now: dt.datetime | None = None, ahead: int = 3) -> list[Period]:
    """The periods a terms change may start from: the current one and the next ``ahead``."""
    terms = retainer.terms()
    today = (now or dt.datetime.now(dt.UTC)).astimezone(terms.tz).date()
    periods = periods_through(terms, today)
    while len(periods) <= max(index_of(periods, today), 0) + ahead:
        periods = periods_through(terms, periods[-1].end)
    first = max(index_of(periods, today), 0)
    return periods[first:first + ahead + 1]
