"""Closed periods a sync changed: measured here, marked by the ledger's revision marks.

A sync that removes, changes or adds an entry dated in a period that already closed revises that
period's used hours. :func:`closed_usage` reads the used seconds of every closed period the change may
touch before the sync writes; :func:`mark_closed_periods_revised` reads them again after, and every
period whose figure moved is a revision (was → now).

``mark_closed_periods_revised`` is the single call site for the ledger's "revised on DATE (was X h)"
marks (the routing work adds them): it hands each revision to the ledger there and returns them, so
the sync's result and the Connections page list them too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.retainers.models import Retainer
from hourtab.retainers.periods import local_date, periods_through
from hourtab.retainers.service import retainer_ledger


@dataclass(frozen=True)
class PeriodRevision:
    retainer_id: int
    period_start: dt.date
    was_s: int
    now_s: int

    def as_json(self) -> dict:
        return {"retainer_id": self.retainer_id, "period_start": self.period_start.isoformat(),
                "was_s": self.was_s, "now_s": self.now_s}


Usage = dict[tuple[int, dt.date], int]


def _retainers(session: Session, account_id: int) -> list[Retainer]:
    return list(session.scalars(select(Retainer).where(Retainer.account_id == account_id).order_by(Retainer.id)))


def touches_closed(session: Session, account_id: int, when: Iterable[dt.datetime | dt.date], now: dt.datetime) -> bool:
    """Does one of these entries (an aware start, or a date for date-only entries) lie in a closed period
    of one of the account's retainers, read in that retainer's zone?"""
    items = list(when)
    if not items:
        return False
    for retainer in _retainers(session, account_id):
        terms = retainer.terms()
        current = periods_through(terms, local_date(now, terms.tz))[-1]
        if any((local_date(w, terms.tz) if isinstance(w, dt.datetime) else w) < current.start for w in items):
            return True
    return False


def closed_usage(session: Session, account_id: int, now: dt.datetime) -> Usage:
    """Used seconds of every closed period of the account's retainers, as the ledger counts them."""
    usage: Usage = {}
    for retainer in _retainers(session, account_id):
        ledger = retainer_ledger(session, retainer, now, text=False)
        usage.update({(retainer.id, p.period.start): p.used_s for p in ledger.periods if not p.is_open})
    return usage


def mark_closed_periods_revised(session: Session, account_id: int, before: Usage | None,
                                now: dt.datetime) -> list[PeriodRevision]:
    """The closed periods whose used hours this sync changed (``before`` from :func:`closed_usage`).

    Wiring point for the ledger's revision marks: each revision found here is the one to record as
    "revised on DATE (was X h)" on the page, the JSON, the statement and the feed.
    """
    if before is None:
        return []
    after = closed_usage(session, account_id, now)
    return [PeriodRevision(retainer_id, start, before.get((retainer_id, start), 0), after.get((retainer_id, start), 0))
            for retainer_id, start in sorted(before.keys() | after.keys())
            if before.get((retainer_id, start), 0) != after.get((retainer_id, start), 0)]
