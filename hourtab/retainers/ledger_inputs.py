"""What a ledger is computed from besides its day totals: the retainer's terms, terms versions and
credits, read for every retainer a change involves at once (three queries, not three a retainer).

An import's preview and its closed-period watch read the ledgers of each retainer the file touches,
before and after; a query a retainer and a read made again for each of them was most of a small
import's fixed cost. Reads name their columns (see ``assign``), so the data migrations that run
the revision watch can run this too, on schemas older than the money columns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.retainers.ledger import Credit, Ledger
from hourtab.retainers.models import Retainer, RetainerCredit, RetainerTerms
from hourtab.retainers.periods import index_of, local_date, periods_through
from hourtab.retainers.terms import Rounding, Terms
from hourtab.retainers.totals import DayTotals, ledger_of_days, schedule_roundings

#: Retainer columns ``Retainer.terms()`` reads for hours (a revision is about hours, never money: the
#: money columns are left out, so this runs inside migrations older than them).
TERMS_COLUMNS = ("id", "account_id", "timezone", "allotment_s", "start_date", "period", "reset_day", "rollover",
                 "rollover_cap_s", "rollover_expiry_periods", "overage", "overage_rate", "rounding_min",
                 "rounding_mode", "minimum_min")
VERSION_COLUMNS = ("effective_from", "allotment_s", "rollover", "rollover_cap_s", "rollover_expiry_periods",
                   "overage", "overage_rate", "rounding_min", "rounding_mode", "minimum_min", "created_at")
#: Ids per ``IN (...)`` list: well under every backend's parameter limit.
CHUNK = 500


@dataclass(frozen=True)
class LedgerInputs:
    """One retainer's terms (as of now), its schedule of terms versions and its credits."""

    terms: Terms
    schedule: list[tuple[dt.date, Terms]]
    credits: list[Credit]

    @property
    def roundings(self) -> list[Rounding]:
        return schedule_roundings(self.terms, self.schedule)

    def ledger(self, totals: DayTotals, now: dt.datetime) -> Ledger:
        return ledger_of_days(self.terms, totals, self.credits, as_of=now, schedule=self.schedule)

    def folds(self, now: dt.datetime) -> list[dt.date]:
        return period_starts(self.terms, now)


def period_starts(terms: Terms, now: dt.datetime) -> list[dt.date]:
    """The starts of the periods up to the current one's as of ``now``: ``day_totals_of`` folds each
    closed period's days into one row with them."""
    today = local_date(now, terms.tz)
    periods = periods_through(terms, today)
    return [p.start for p in periods[:index_of(periods, today) + 1]]


def ledger_inputs(session: Session, retainer_ids: Iterable[int]) -> dict[int, LedgerInputs]:
    """Each existing retainer's ``LedgerInputs``, by id (a deleted one is left out)."""
    ids = sorted({int(i) for i in retainer_ids})
    retainers: dict[int, Retainer] = {}
    versions: dict[int, list[RetainerTerms]] = {}
    credits: dict[int, list[Credit]] = {}
    for k in range(0, len(ids), CHUNK):
        part = ids[k:k + CHUNK]
        for row in session.execute(select(*(getattr(Retainer, c) for c in TERMS_COLUMNS)).where(Retainer.id.in_(part))):
            retainers[int(row[0])] = Retainer(**dict(zip(TERMS_COLUMNS, row, strict=True)))
        for rid, *values in session.execute(
                select(RetainerTerms.retainer_id, *(getattr(RetainerTerms, c) for c in VERSION_COLUMNS))
                .where(RetainerTerms.retainer_id.in_(part)).order_by(RetainerTerms.effective_from)):
            versions.setdefault(int(rid), []).append(RetainerTerms(**dict(zip(VERSION_COLUMNS, values, strict=True))))
        for rid, *values in session.execute(
                select(RetainerCredit.retainer_id, RetainerCredit.kind, RetainerCredit.on_date, RetainerCredit.seconds,
                       RetainerCredit.reason, RetainerCredit.id).where(RetainerCredit.retainer_id.in_(part))):
            credits.setdefault(int(rid), []).append(Credit(*values))
    out = {}
    for rid, retainer in retainers.items():
        base = retainer.terms()
        schedule = [(v.effective_from, v.terms(base)) for v in versions.get(rid, [])] or [(base.start, base)]
        out[rid] = LedgerInputs(base, schedule, credits.get(rid, []))
    return out
