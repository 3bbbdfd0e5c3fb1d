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
                  "revisions": [the same objects, oldest first]}],
     "credits": [{"kind": "topup" | "adjustment", "date", "hours", "seconds", "reason"}]}
"""

from __future__ import annotations

import csv
import io
from typing import Any

from hourtab.retainers.ledger import Ledger, PeriodBalance
from hourtab.retainers.presentation import format_hours
from hourtab.retainers.report import HoursReport, entry_lines
from hourtab.retainers.terms import Terms

SCHEMA = "hourtab.hours/1"
FIGURES = ("opening", "allotment", "topups", "adjustments", "available", "used", "closing", "expired",
           "overage", "billed")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def revision_json(revision) -> dict[str, Any]:
    """One ``revisions.Revision``: when, why, and the figure the period had before it."""
    return {"on": revision.on.isoformat(), "at": _iso(revision.at), "revision": revision.number,
            "reason": revision.reason, "was_used_seconds": revision.was_used_s,
            "was_used_hours": format_hours(revision.was_used_s), "was_entries": revision.was_entries,
            "used_seconds": revision.used_s, "used_hours": format_hours(revision.used_s),
            "entries": revision.entries}


def period_json(balance: PeriodBalance, revisions: tuple = ()) -> dict[str, Any]:
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
    return out


def terms_json(terms: Terms) -> dict[str, Any]:
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
        "summary": terms.describe()}


def report_json(report: HoursReport) -> dict[str, Any]:
    terms, info, ledger = report.info.terms, report.info, report.ledger
    current = period_json(ledger.current)
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
            "terms": terms_json(terms),
            "terms_history": [{"from": start.isoformat(), **terms_json(t)} for start, t in ledger.schedule]},
        "current": current,
        "periods": [period_json(p, report.revisions.get(p.period.start, ())) for p in ledger.periods],
        "credits": [{"kind": c.kind, "date": c.on.isoformat(), "hours": format_hours(c.seconds),
                     "seconds": c.seconds, "reason": c.reason} for c in ledger.credits],
    }


def neutralise(cell: str) -> str:
    """Prefix a quote to text a spreadsheet would evaluate (``=HYPERLINK(…)``, ``+1``, ``@SUM``)."""
    return "'" + cell if cell.startswith(FORMULA_START) else cell


#: ``person`` came last, so programs that read the columns by position keep working.
CSV_HEADER = ("date", "start", "period", "project", "task", "description", "duration_hours",
              "rounded_hours", "duration_seconds", "rounded_seconds", "person")


def entries_csv(ledger: Ledger) -> str:
    """Every counted entry, oldest first; text cells neutralised, figures exact; ``person`` is who did
    the work where the export names people (a team's export), empty otherwise."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    labels = {i: p.period.label for i, p in enumerate(ledger.periods)}
    frame = ledger.entries
    for line, index in zip(entry_lines(ledger, frame), frame["period"], strict=True):
        writer.writerow((line.day.isoformat(), line.start, labels[int(index)], neutralise(line.project),
                         neutralise(line.task), neutralise(line.description),
                         format_hours(line.duration_s), format_hours(line.rounded_s), line.duration_s,
                         line.rounded_s, neutralise(line.person)))
    return buf.getvalue()
