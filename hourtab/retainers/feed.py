"""The items of a retainer's Atom feed, each with the figures as they stood at its own time.

An import item says what the import brought (its entries, rounded as the page rounds them) and
the period's headline right after it, computed from the entries, credits and terms that existed
then, not from today's ledger. A period item gives the period's closing figures. A revision item
says that a closed period changed after it closed, and what it was before; a terms item, that
the terms change from a period on.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hourtab.core.i18n import Writer, writer
from hourtab.retainers.currency import stored
from hourtab.retainers.hours_report import HoursReport
from hourtab.retainers.ledger import Credit
from hourtab.retainers.models import Retainer, RetainerCredit, RetainerTerms, retainer_entries
from hourtab.retainers.presentation import headline, hours_formatter, short_date
from hourtab.retainers.totals import ledger_of_days, schedule_roundings, upload_day_totals
from hourtab.retainers.versions import terms_schedule
from hourtab.timesheets.models import TimeEntry, Upload

#: Import items in the feed, newest first.
MAX_IMPORTS = 30
#: A terms version written this close to the retainer's creation is the one it was created with.
SETUP_WINDOW = dt.timedelta(seconds=5)


@dataclass(frozen=True)
class FeedItem:
    id: str
    title: str
    updated: dt.datetime
    link: str  # relative to the page: "" for the page itself, else "/statement/YYYY-MM.pdf"
    summary: str


def _urn(*parts: object) -> str:
    return "urn:hourtab:" + hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:32]


def feed_id(retainer_id: int) -> str:
    return _urn(retainer_id, "feed")


def _entries(n: int, w: Writer) -> str:
    return w.ngettext("%(n)s entry", "%(n)s entries", n) % {"n": n}


def _imports(session: Session, retainer_id: int) -> list[tuple[int, dt.datetime]]:
    rows = session.execute(
        select(Upload.id, func.coalesce(Upload.imported_at, Upload.created_at))
        .where(Upload.id.in_(select(TimeEntry.upload_id).join(
            retainer_entries, retainer_entries.c.entry_id == TimeEntry.id)
            .where(retainer_entries.c.retainer_id == retainer_id)))
        .order_by(Upload.id.desc()).limit(MAX_IMPORTS)).all()
    return [(int(i), at) for i, at in rows]


def _credits_then(session: Session, retainer: Retainer, at: dt.datetime) -> list[Credit]:
    rows = session.scalars(select(RetainerCredit).where(RetainerCredit.retainer_id == retainer.id,
                                                        RetainerCredit.created_at <= at))
    return [Credit(c.kind, c.on_date, c.seconds, c.reason, c.id, stored(c.amount, c.currency), c.currency) for c in rows]


def import_items(session: Session, retainer: Retainer, unit: str = "decimal") -> list[FeedItem]:
    """One item per import that brought entries to this retainer, with that moment's figures.

    From the day totals per import: at an import, the entries of it and of every earlier one (and
    those no import brought), under the credits and terms known then."""
    h = hours_formatter(unit)
    w = writer(retainer.language)
    terms = retainer.terms()
    imports = [(upload_id, at, terms_schedule(session, retainer, known_at=at))
               for upload_id, at in _imports(session, retainer.id)]
    roundings = list(dict.fromkeys(r for _, _, schedule in imports for r in schedule_roundings(terms, schedule)))
    totals, uploads = upload_day_totals(session, retainer.id, roundings)
    items = []
    for upload_id, at, schedule in imports:
        ledger = ledger_of_days(terms, totals.where(uploads <= upload_id), _credits_then(session, retainer, at),
                                as_of=at, schedule=schedule)
        brought = ledger_of_days(terms, totals.where(uploads == upload_id), as_of=at, schedule=schedule).periods
        n, seconds = sum(p.entry_count for p in brought), sum(p.used_s for p in brought)
        items.append(FeedItem(
            id=_urn(retainer.id, "upload", upload_id), updated=at, link="",
            title=w.gettext("Import: %(entries)s (%(hours)s h)") % {"entries": _entries(n, w), "hours": h(seconds)},
            summary=w.gettext("As of %(when)s: %(period)s: %(headline)s") % {
                "when": w.moment(at, terms.tz), "period": w.period(ledger.current.period),
                "headline": headline(ledger.current, unit, w)}))
    return items


def period_items(report: HoursReport, retainer_id: int) -> Iterator[FeedItem]:
    """One item per closed period, dated at its reset (local midnight), with its closing figures."""
    h = hours_formatter(report.info.hours_unit)
    w = writer(report.info.language)
    for p in report.ledger.periods:
        if p.is_open:
            continue
        closed_at = dt.datetime.combine(p.period.end, dt.time(0), tzinfo=report.info.terms.tz)
        yield FeedItem(
            id=_urn(retainer_id, "period", p.period.start.isoformat()), updated=closed_at,
            link=f"/statement/{p.period.month_key}.pdf",
            title=w.gettext("%(period)s closed: %(used)s h used, balance %(closing)s h") % {
                "period": w.period(p.period), "used": h(p.used_s), "closing": h(p.closing_s)},
            summary=w.gettext("%(available)s h available, %(used)s h used (%(entries)s), %(expired)s h expired.") % {
                "available": h(p.available_s), "used": h(p.used_s), "entries": _entries(p.entry_count, w),
                "expired": h(p.expired_s)})


def revision_items(report: HoursReport, retainer_id: int) -> Iterator[FeedItem]:
    """One item per revision of a closed period, at the moment it was revised."""
    h = hours_formatter(report.info.hours_unit)
    w = writer(report.info.language)
    labels = {p.period.start: (w.period(p.period), p.period.month_key) for p in report.ledger.periods}
    for start, revisions in report.revisions.items():
        label, month = labels.get(start, (start.isoformat(), f"{start.year:04d}-{start.month:02d}"))
        for r in revisions:
            yield FeedItem(
                id=_urn(retainer_id, "revision", start.isoformat(), r.number), updated=r.at,
                link=f"/statement/{month}.pdf",
                title=w.gettext("%(period)s revised: %(used)s h used (was %(was)s h)") % {
                    "period": label, "used": h(r.used_s), "was": h(r.was_used_s)},
                summary=w.gettext("Revision %(number)s of %(period)s, on %(on)s: %(entries)s, %(used)s h used; "
                                  "before it %(was_entries)s, %(was)s h.") % {
                    "number": r.number, "period": label,
                    "on": short_date(r.on, True) if w.language == "en" else w.date(r.on),
                    "entries": _entries(r.entries, w), "used": h(r.used_s),
                    "was_entries": _entries(r.was_entries, w), "was": h(r.was_used_s)})


def terms_items(session: Session, retainer: Retainer, report: HoursReport) -> list[FeedItem]:
    """One item per change of terms made after the retainer was set up, when it was made."""
    base = retainer.terms()
    versions = list(session.scalars(select(RetainerTerms).where(RetainerTerms.retainer_id == retainer.id)
                                    .order_by(RetainerTerms.created_at, RetainerTerms.id)))
    w = writer(retainer.language)
    items = []
    for i, v in enumerate(versions):
        # The terms it was created with are not a change: they carry the retainer's own creation
        # time (retainers made before that was so: the first version, written along with it).
        if v.created_at == retainer.created_at or (i == 0 and abs(v.created_at - retainer.created_at) <= SETUP_WINDOW):
            continue
        figures = {"on": short_date(v.effective_from, True) if w.language == "en" else w.date(v.effective_from),
                   "terms": v.terms(base).describe(w)}
        items.append(FeedItem(
            id=_urn(retainer.id, "terms", v.id, v.created_at.isoformat()), updated=v.created_at, link="",
            title=w.gettext("Terms from %(on)s: %(terms)s") % figures,
            summary=w.gettext("From the period starting %(on)s: %(terms)s. "
                              "Periods before it keep the terms they ran under.") % figures))
    return items


def feed_items(session: Session, retainer: Retainer, report: HoursReport) -> list[FeedItem]:
    """Every item, newest first."""
    items = (import_items(session, retainer, report.info.hours_unit) + [*period_items(report, retainer.id)]
             + [*revision_items(report, retainer.id)] + terms_items(session, retainer, report))
    return sorted(items, key=lambda i: i.updated, reverse=True)
