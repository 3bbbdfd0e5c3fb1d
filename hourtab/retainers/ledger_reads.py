"""Reading a retainer's figures from the database: its ledger (from the day totals, with the
entries of the periods asked for) and the hours report the public page, JSON, feed and CSV show.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.retainers.credits import credits_of
from hourtab.retainers.hours_report import HoursReport, RetainerInfo, build_report
from hourtab.retainers.ledger import Ledger
from hourtab.retainers.ledger_inputs import period_starts
from hourtab.retainers.models import Retainer
from hourtab.retainers.revisions import revisions_of
from hourtab.retainers.terms import Terms
from hourtab.retainers.totals import (
    Pick,
    all_periods,
    day_totals_of,
    ledger_of_days,
    no_periods,
    schedule_roundings,
    with_entries,
)
from hourtab.retainers.versions import terms_schedule
from hourtab.timesheets.models import Upload


def retainer_ledger(session: Session, retainer: Retainer, as_of: dt.datetime | None = None,
                    text: bool = True, entries: Pick = all_periods) -> Ledger:
    """The retainer's ledger from its day totals, holding the entries of the periods ``entries``
    picks (with description, project, task and person unless ``text`` is false)."""
    terms, schedule = retainer.terms(), terms_schedule(session, retainer)
    as_of = as_of or dt.datetime.now(dt.UTC)
    totals = day_totals_of(session, {retainer.id: (schedule_roundings(terms, schedule), None)},
                           {retainer.id: period_starts(terms, as_of)})[retainer.id]
    ledger = ledger_of_days(terms, totals, credits_of(session, retainer), as_of=as_of, schedule=schedule)
    return with_entries(session, ledger, retainer.id, entries(ledger), text)


def last_import_at(session: Session, account_id: int) -> dt.datetime | None:
    return session.scalar(select(func.max(func.coalesce(Upload.imported_at, Upload.created_at))).where(
        Upload.account_id == account_id, Upload.status == "imported"))


def retainer_info(session: Session, retainer: Retainer, terms: Terms | None = None) -> RetainerInfo:
    """Names and contact, with ``terms`` (the current period's) or the retainer's latest."""
    account = session.get(Account, retainer.account_id)
    return RetainerInfo(name=retainer.name, client=retainer.client,
                        consultant_name=account.name_or_email if account else "",
                        consultant_contact=(account.contact or account.email) if account else "",
                        terms=terms or retainer.terms(),
                        hours_unit=account.hours_unit if account else "decimal", language=retainer.language)


def hours_report(session: Session, retainer: Retainer, as_of: dt.datetime | None = None,
                 entries: Pick = no_periods) -> HoursReport:
    """Everything the public page shows, computed from the database as of ``as_of`` (now).

    The figures come from the day totals; the entries listed are the current period's (what the
    page, the JSON and the feed show) and those of the periods ``entries`` picks besides (the CSV
    lists them all, a statement its month's).
    """
    as_of = as_of or dt.datetime.now(dt.UTC)
    ledger = retainer_ledger(session, retainer, as_of,
                             entries=lambda ledger: {ledger.current_index, *entries(ledger)})
    return build_report(retainer_info(session, retainer, ledger.terms), ledger, as_of,
                        last_import_at(session, retainer.account_id), revisions=revisions_of(session, retainer))
