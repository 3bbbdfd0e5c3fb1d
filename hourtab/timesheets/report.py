"""What a read found, in the shape ``hourtab csv inspect --json`` prints and the preview shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hourtab.timesheets.errors import MAX_LISTED_ERRORS, RowIssue

#: The public JSON keys of ``hourtab csv inspect --json``, in order (a documented shape: add keys, never rename).
INSPECT_KEYS = ("format", "encoding", "delimiter", "rows", "entries", "total_seconds", "total_hours",
                "first_date", "last_date", "clients", "projects", "warnings", "errors")


def display_hours(seconds: int) -> float:
    """Hours for display only, derived from the exact integer total (never summed as floats)."""
    return round(seconds / 3600, 4)


@dataclass
class ReadReport:
    format: str
    format_label: str
    explanation: str
    encoding: str
    delimiter: str
    columns: list[str]
    timezone: str
    rows: int = 0
    entries: int = 0
    total_seconds: int = 0
    first_date: str | None = None
    last_date: str | None = None
    clients: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[RowIssue] = field(default_factory=list)
    date_order: str | None = None
    blank_rows: int = 0
    #: Why the times were read in ``timezone`` (chosen, the tracker profile's, the account's).
    timezone_why: str = ""
    #: Said when the account's zone is not the tracker profile's (``zone.UploadZone.warning``).
    zone_warning: str = ""
    #: The zones the rows were read in, with how many rows each (``zone``, ``why``, ``entries``):
    #: one since every row of a file is read in the exporter's zone; uploads imported before kept
    #: one per retainer zone.
    zones: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total_hours(self) -> float:
        return display_hours(self.total_seconds)

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_json(self) -> dict[str, Any]:
        """Exactly the documented ``csv inspect --json`` shape."""
        return {
            "format": self.format, "encoding": self.encoding, "delimiter": self.delimiter,
            "rows": self.rows, "entries": self.entries, "total_seconds": self.total_seconds,
            "total_hours": self.total_hours, "first_date": self.first_date, "last_date": self.last_date,
            "clients": self.clients, "projects": self.projects, "warnings": self.warnings,
            "errors": [{"line": e.line, "column": e.column, "value": e.value, "message": _message(e)}
                       for e in self.errors[:MAX_LISTED_ERRORS]],
        }

    def as_dict(self) -> dict[str, Any]:
        """Everything, for storing with the upload and for the preview page."""
        return {**self.as_json(), "format_label": self.format_label, "explanation": self.explanation,
                "columns": self.columns, "timezone": self.timezone, "timezone_why": self.timezone_why,
                "zone_warning": self.zone_warning, "zones": self.zones,
                "date_order": self.date_order,
                "error_count": len(self.errors), "blank_rows": self.blank_rows}


def _message(issue: RowIssue) -> str:
    return f"{issue.message}; expected {issue.expected}" if issue.expected else issue.message


def describe(frame: pd.DataFrame, report: ReadReport) -> None:
    """Fill the report's totals from the valid entries."""
    report.entries = len(frame)
    report.total_seconds = int(frame["duration_s"].sum()) if len(frame) else 0
    if len(frame):
        report.first_date = frame["local_date"].min().date().isoformat()
        report.last_date = frame["local_date"].max().date().isoformat()
    report.clients = sorted(c for c in frame["client"].unique().tolist() if c)
    report.projects = sorted(p for p in frame["project"].unique().tolist() if p)


def totals(frame: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Per client and project, and per month: seconds summed as integers, hours derived."""
    if not len(frame):
        return {"by_project": [], "by_month": []}
    by_project = (frame.groupby(["client", "project"], sort=True)["duration_s"]
                  .agg(["sum", "count"]).reset_index())
    month = frame["local_date"].dt.strftime("%Y-%m")
    by_month = frame.assign(month=month).groupby("month", sort=True)["duration_s"].agg(["sum", "count"]).reset_index()
    return {
        "by_project": [{"client": r["client"], "project": r["project"], "seconds": int(r["sum"]),
                        "entries": int(r["count"]), "hours": display_hours(int(r["sum"]))}
                       for r in by_project.to_dict("records")],
        "by_month": [{"month": r["month"], "seconds": int(r["sum"]), "entries": int(r["count"]),
                      "hours": display_hours(int(r["sum"]))} for r in by_month.to_dict("records")],
    }
