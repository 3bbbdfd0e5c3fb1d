"""The client's exports: the JSON document (schema ``hourtab.hours/1``) and the entries CSV.

JSON carries every figure twice: exact integer seconds (``*_seconds``) for programs, and hours as
decimal strings (``*_hours``, two places at most) for people; never binary floats. The CSV
neutralises cells a spreadsheet would run as a formula (OWASP "CSV injection").

Schema ``hourtab.hours/1``::

    {"schema": "hourtab.hours/1", "as_of": ISO-8601, "updated_at": ISO-8601 | null,
     "retainer": {"name", "client", "consultant": {"name", "contact"},
                  "terms": {"hours_per_period", "period", "reset_day", "start", "timezone",
                            "rollover", "rollover_cap_hours", "rollover_expiry_periods",
                            "overage", "overage_rate", "rounding": {"increment_minutes", "mode",
                            "minimum_minutes"}, "summary"},
                  "terms_history": [{"from": first day, ...the terms fields above}, oldest first]},
     "current": {"headline", "used_percent", "resets_on", "forecast": {"kind", "text",
                 "projected_hours", "run_out_on", "basis"}, ...the period fields below},
     "periods": [{"start", "last_day", "label", "open", "entries",
                  "<figure>_seconds", "<figure>_hours" for figure in opening, allotment, topups,
                  adjustments, available, used, closing, expired, overage, billed;
                  "billed_amount": decimal string | null,
                  "revised": null | {"on", "at", "revision", "reason", "was_used_seconds",
                                     "was_used_hours", "was_entries", "used_seconds", "used_hours",
                                     "entries"} (the latest revision of a closed period),
                  "revisions": [the same objects, oldest first],
                  "money": null | {"currency", "fee", "rate", "rate_basis": "hourly_rate" | "fee",
                                   "overage_rate", "used_amount", "remaining_amount", "overage_amount",
                                   "topups_amount", "due_amount"}}],
     "credits": [{"kind": "topup" | "adjustment", "date", "hours", "seconds", "reason",
                  "amount": decimal string | null, "currency": code | null}]}

Terms carry ``"money": null | {"currency", "fee", "hourly_rate", "overage_rate"}`` too. Amounts are
decimal strings in the currency's minor unit (``"3000.00"``, ``"480000"`` for JPY).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal
from typing import Any

from hourtab.core import i18n
from hourtab.retainers.currency import quantize
from hourtab.retainers.hours_report import HoursReport, entry_lines
from hourtab.retainers.ledger import Ledger, PeriodBalance
from hourtab.retainers.presentation import format_hours
from hourtab.retainers.pricing import PeriodMoney, entry_worth
from hourtab.retainers.revisions import Revision
from hourtab.retainers.terms import Terms

SCHEMA = "hourtab.hours/1"
FIGURES = ("opening", "allotment", "topups", "adjustments", "available", "used", "closing", "expired",
           "overage", "billed")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _iso(value: dt.date | dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def revision_json(revision: Revision) -> dict[str, Any]:
    """One ``revisions.Revision``: when, why, and the figure the period had before it."""
    return {"on": revision.on.isoformat(), "at": _iso(revision.at), "revision": revision.number,
            "reason": revision.reason, "was_used_seconds": revision.was_used_s,
            "was_used_hours": format_hours(revision.was_used_s), "was_entries": revision.was_entries,
            "used_seconds": revision.used_s, "used_hours": format_hours(revision.used_s),
            "entries": revision.entries}


def _amount(value: Decimal | None) -> str | None:
    return str(value) if value is not None else None


def money_json(money: PeriodMoney | None) -> dict[str, Any] | None:
    """One period's amounts (``pricing.PeriodMoney``) as decimal strings, or ``None``."""
    if money is None:
        return None
    own_rate = money.rate is not None and money.rate == quantize(money.rate, money.currency)
    rate = money.rate if money.rate is None or own_rate else money.rate.quantize(Decimal("0.0001"))
    return {"currency": money.currency, "fee": _amount(money.fee), "rate": _amount(rate),
            "rate_basis": "hourly_rate" if own_rate else "fee", "overage_rate": _amount(money.overage_rate),
            "used_amount": _amount(money.used), "remaining_amount": _amount(money.remaining),
            "overage_amount": _amount(money.overage), "topups_amount": _amount(money.topups),
            "due_amount": _amount(money.due)}


def period_json(balance: PeriodBalance, revisions: tuple = (), money: PeriodMoney | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"start": balance.period.start.isoformat(),
                           "last_day": balance.period.last_day.isoformat(),
                           "label": balance.period.label, "open": balance.is_open,
                           "entries": balance.entry_count}
    for name in FIGURES:
        seconds = getattr(balance, f"{name}_s")
        out[f"{name}_seconds"] = seconds
        out[f"{name}_hours"] = format_hours(seconds)
    out["billed_amount"] = str(balance.billed_amount) if balance.billed_amount is not None else None
    out["revisions"] = [revision_json(r) for r in revisions]
    out["revised"] = out["revisions"][-1] if revisions else None
    out["money"] = money_json(money)
    return out


def terms_json(terms: Terms, w: i18n.Writer | None = None) -> dict[str, Any]:
    """The terms for programs; ``summary`` is for people, in the words of ``w`` (default English)."""
    return {
        "hours_per_period": format_hours(terms.allotment_s), "period": terms.period.value,
        "reset_day": terms.reset_day, "start": terms.start.isoformat(), "timezone": terms.timezone,
        "rollover": terms.rollover.value,
        "rollover_cap_hours": format_hours(terms.rollover_cap_s) if terms.rollover_cap_s is not None else None,
        "rollover_expiry_periods": terms.rollover_expiry_periods,
        "overage": terms.overage.value,
        "overage_rate": str(terms.overage_rate) if terms.overage_rate is not None else None,
        "rounding": {"increment_minutes": terms.rounding.increment_min, "mode": terms.rounding.mode.value,
                     "minimum_minutes": terms.rounding.minimum_min},
        "summary": terms.describe(w),
        "money": None if terms.currency is None else {
            "currency": terms.currency, "fee": _amount(terms.fee), "hourly_rate": _amount(terms.hourly_rate),
            "overage_rate": _amount(terms.overage_rate)}}


def report_json(report: HoursReport) -> dict[str, Any]:
    terms, info, ledger = report.info.terms, report.info, report.ledger
    w = i18n.writer(info.language)  # what the JSON says to people (headline, forecast, summary); keys stay
    money = report.money or (None,) * len(ledger.periods)
    current = period_json(ledger.current, money=money[ledger.current_index])
    f = report.forecast
    current.update({
        "headline": report.headline, "used_percent": report.percent,
        "resets_on": ledger.current.period.end.isoformat(),
        "forecast": {"kind": f.kind, "text": f.text,
                     "projected_hours": format_hours(f.projected_s) if f.projected_s is not None else None,
                     "run_out_on": _iso(f.run_out_on), "basis": f.basis}})
    return {
        "schema": SCHEMA,
        "as_of": _iso(report.as_of),
        "updated_at": _iso(report.updated_at),
        "retainer": {
            "name": info.name, "client": info.client,
            "consultant": {"name": info.consultant_name, "contact": info.consultant_contact},
            "terms": terms_json(terms, w),
            "terms_history": [{"from": start.isoformat(), **terms_json(t, w)} for start, t in ledger.schedule]},
        "current": current,
        "periods": [period_json(p, report.revisions.get(p.period.start, ()), money[i])
                    for i, p in enumerate(ledger.periods)],
        "credits": [{"kind": c.kind, "date": c.on.isoformat(), "hours": format_hours(c.seconds),
                     "seconds": c.seconds, "reason": c.reason, "amount": _amount(c.amount),
                     "currency": c.currency} for c in ledger.credits],
    }


def neutralise(cell: str) -> str:
    """Prefix a quote to text a spreadsheet would evaluate (``=HYPERLINK(…)``, ``+1``, ``@SUM``)."""
    return "'" + cell if cell.startswith(FORMULA_START) else cell


#: ``person`` came last, then the amount, so programs that read the columns by position keep working.
CSV_HEADER = ("date", "start", "period", "project", "task", "description", "duration_hours",
              "rounded_hours", "duration_seconds", "rounded_seconds", "person", "amount", "currency")


def entries_csv(ledger: Ledger) -> str:
    """Every counted entry, oldest first; text cells neutralised, figures exact; ``person`` is who did
    the work where the export names people (a team's export), empty otherwise; ``amount`` the rounded
    hours at their period's rate in ``currency`` (both empty for hours sold without a price)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    labels = {i: p.period.label for i, p in enumerate(ledger.periods)}
    frame = ledger.entries
    for line, index in zip(entry_lines(ledger, frame), frame["period"], strict=True):
        amount, currency = entry_worth(ledger, int(index), line.rounded_s)
        writer.writerow((line.day.isoformat(), line.start, labels[int(index)], neutralise(line.project),
                         neutralise(line.task), neutralise(line.description),
                         format_hours(line.duration_s), format_hours(line.rounded_s), line.duration_s,
                         line.rounded_s, neutralise(line.person), _amount(amount) or "", currency or ""))
    return buf.getvalue()
