"""Period statements as PDF: the totals, balance, entries and adjustments of one month's periods.

A statement covers every period that *starts* in the given month (one for monthly and quarterly
retainers, four or five for weekly ones), so ``/statement/2025-11.pdf`` means the same thing for
every kind of retainer. The HTML is built with Jinja2's autoescaping and rendered by the safe
renderer in ``hourtab.core.documents``, which fetches nothing from outside our bundled assets.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hourtab.core.documents import PdfMeta, meta_tags, render, render_pdf
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.i18n import writer
from hourtab.retainers.currency import format_money
from hourtab.retainers.hours_report import RetainerInfo, entry_lines
from hourtab.retainers.ledger import Ledger
from hourtab.retainers.models import Retainer, RetainerCredit, retainer_entries
from hourtab.retainers.periods import periods_through
from hourtab.retainers.presentation import hours_formatter, unit_label
from hourtab.retainers.pricing import price_period
from hourtab.timesheets.models import TimeEntry

MONTH_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def parse_month(text: str) -> tuple[int, int]:
    match = MONTH_RE.match(text or "")
    if not match:
        raise InvalidInput(f"A statement month looks like 2025-11, not {text!r}.")
    return int(match.group(1)), int(match.group(2))


def statement_indices(ledger: Ledger, month: str) -> list[int]:
    """Indices of the periods that start in ``month`` (``YYYY-MM``); ``NotFound`` when none do."""
    found = month_periods(month)(ledger)
    if not found:
        raise NotFound(f"No period of this retainer starts in {month}.")
    return found


def month_periods(month: str) -> Callable[[Ledger], list[int]]:
    """Picks the indices of the periods starting in ``month`` (none: ``statement_indices`` says so)."""
    year, mon = parse_month(month)
    return lambda ledger: [i for i, p in enumerate(ledger.periods)
                           if (p.period.start.year, p.period.start.month) == (year, mon)]


def month_status(session: Session, retainer: Retainer, month: str, today: dt.date) -> str | None:
    """``"closed"`` or ``"open"`` for a month in which periods of the retainer start, else ``None``.

    Answered from the terms and two indexed maxima, without building the ledger, so that a request
    for a month with no period costs a fraction of a millisecond instead of a full render. The
    ledger runs through today or the latest entry or credit, whichever is later; so does this.
    """
    year, mon = parse_month(month)
    first = dt.date(year, mon, 1)
    terms = retainer.terms()
    if (year, mon) < (terms.start.year, terms.start.month):
        return None
    last_day = today
    if first > today:
        latest_entry = session.scalar(
            select(func.max(TimeEntry.local_date)).join(retainer_entries, retainer_entries.c.entry_id == TimeEntry.id)
            .where(retainer_entries.c.retainer_id == retainer.id))
        latest_credit = session.scalar(select(func.max(RetainerCredit.on_date))
                                       .where(RetainerCredit.retainer_id == retainer.id))
        # An entry's day in the retainer's zone can be a day after its tracker's local date.
        last_day = max([today, *(d + dt.timedelta(days=1) for d in (latest_entry, latest_credit) if d)])
    starting = [p for p in periods_through(terms, last_day) if (p.start.year, p.start.month) == (year, mon)]
    if not starting:
        return None
    return "closed" if all(p.end <= today for p in starting) else "open"


def statement_html(info: RetainerInfo, ledger: Ledger, month: str, as_of: dt.datetime,
                   revisions: dict | None = None) -> str:
    """The statement's HTML. Once its periods have closed it is dated at the close, not at
    ``as_of``, so the same figures always give the same bytes, however often it is downloaded;
    a closed period revised since (``revisions``) carries its revision number and date instead."""
    indices = statement_indices(ledger, month)
    balances = [ledger.periods[i] for i in indices]
    revised = {b.period.start: (revisions or {}).get(b.period.start, ())[-1]
               for b in balances if (revisions or {}).get(b.period.start)}
    frame = ledger.entries[ledger.entries["period"].isin(indices)]
    credits = [c for i in indices for c in ledger.period_credits(i)]
    first, last = balances[0].period, balances[-1].period
    w = writer(info.language)
    label = w.period(first) if len(balances) == 1 else f"{w.numeric_date(first.start)} – {w.numeric_date(last.last_day)}"
    tz = ledger.terms.tz
    closed = not any(b.is_open for b in balances)
    dated = dt.datetime.combine(last.end, dt.time(0), tzinfo=tz) if closed else as_of
    latest = max(revised.values(), key=lambda r: r.at, default=None)
    stamp = (w.gettext("closed %(when)s") if closed else w.gettext("as of %(when)s")) % {
        "when": w.clock_time(dated, tz)}
    if closed and latest is not None:
        dated = latest.at
        stamp += " · " + w.gettext("revision %(number)s, %(when)s") % {
            "number": latest.number, "when": w.clock_time(latest.at, tz).rsplit(" (", 1)[0]}
    meta = meta_tags(PdfMeta(title=w.gettext("Hours statement %(month)s · %(name)s") % {"month": month, "name": info.name},
                             author=info.consultant_name or "HourTab", created=dated))
    lines = entry_lines(ledger, frame) if len(frame) else []
    return render(
        "statement.html", meta=meta, info=info, label=label, balances=balances, credits=credits, lines=lines,
        day=w.numeric_date, period_label=w.period, **w.template_context(),
        h=hours_formatter(info.hours_unit), unit=unit_label(info.hours_unit), total_s=sum(e.duration_s for e in lines),
        total_rounded_s=sum(e.rounded_s for e in lines), revised=revised, as_of=stamp,
        money={b.period.start: price_period(b, ledger.period_credits(i)) for i, b in zip(indices, balances,
                                                                                           strict=True)},
        fm=lambda amount, currency: format_money(amount, currency, w.language),
        team=len({e.person for e in lines if e.person}) > 1)


def statement_pdf(info: RetainerInfo, ledger: Ledger, month: str, as_of: dt.datetime,
                  revisions: dict | None = None) -> bytes:
    """The statement for ``month`` as PDF bytes (title, author and date set in its metadata)."""
    return render_pdf(statement_html(info, ledger, month, as_of, revisions), writer(info.language).page_css())



