"""Closed periods a sync changed: measured here, marked by the ledger's revision marks.

A sync that removes, changes or adds an entry dated in a period that already closed revises that
period's used hours. The sync wraps its writes in :func:`watch_closed_periods`: when one of the
entries it changes lies in a closed period, the used seconds of every closed period are read before
the writes and again after, and every period whose figure moved is a revision (was → now).

``watch_closed_periods`` is the single place where a sync meets the ledger's "revised on DATE (was X h)"
marks (which the routing work adds as ``hourtab.retainers.revisions.watch_closed_periods``, a context
manager of the same shape): at merge its body becomes a call to that one, and the revisions it yields
are still listed in the sync's result and on the Connections page.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
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


@contextmanager
def watch_closed_periods(session: Session, account_id: int, when: Iterable[dt.datetime | dt.date],
                         now: dt.datetime, reason: str, upload_id: int | None = None
                         ) -> Iterator[list[PeriodRevision]]:
    """Around a sync's writes: yields the list the revised closed periods are appended to on exit.

    ``when``: the starts (or dates) of the entries the writes add, change or remove. Wiring point for
    the ledger's revision marks ("revised on DATE (was X h)" on the page, the JSON, the statement and
    the feed): each revision found here is the one to record, with ``reason`` and ``upload_id``.
    """
    revised: list[PeriodRevision] = []
    before = closed_usage(session, account_id, now) if touches_closed(session, account_id, when, now) else None
    yield revised
    if before is None:
        return
    session.flush()
    after = closed_usage(session, account_id, now)
    revised += [PeriodRevision(retainer_id, start, before.get((retainer_id, start), 0),
                               after.get((retainer_id, start), 0))
                for retainer_id, start in sorted(before.keys() | after.keys())
                if before.get((retainer_id, start), 0) != after.get((retainer_id, start), 0)]
