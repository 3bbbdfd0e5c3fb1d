"""``read_timesheet``: bytes in, normalised entries and a report out. Pure: no database, no Flask.

Whole-file problems (too large, not text, unknown columns, ambiguous day/month order) raise a
typed error. Row problems do not: they are listed in ``report.errors`` and the rows left out of
the frame, so ``csv inspect`` can show all of them and the importer can decide (refuse the file,
or import the valid rows when the consultant asked for that).
"""

from __future__ import annotations

import csv
import io
import itertools
import re

import pandas as pd

from hourtab.timesheets.detect import DELIMITER_NAMES, choose_spec, sniff_header
from hourtab.timesheets.encoding import to_utf8
from hourtab.timesheets.errors import AmbiguousDateOrder, CsvTooLarge, UnreadableFile
from hourtab.timesheets.identity import add_fingerprints
from hourtab.timesheets.mapped import mapped_spec
from hourtab.timesheets.normalise import normalise
from hourtab.timesheets.report import ReadReport, describe
from hourtab.timesheets.spec import FormatSpec
from hourtab.timesheets.table import read_body
from hourtab.timesheets.total_rows import drop_total_rows

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
_CLOCK = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}")
#: Fields that date and time an entry: a row that ends before one of them is refused, not padded.
ESSENTIAL = ("date", "start_date", "start", "start_time", "end_date", "end_time", "end", "duration")
CLOCKIFY_BY_DAY = ("This is a Clockify summary by day: each row is one day's total, and project and client "
                   "are absent, so these hours cannot be split by client or project (export the Detailed "
                   "report for that).")


def optional_columns(spec: FormatSpec, columns: list[str]) -> frozenset[int]:
    """Columns a row may leave out at its end (a writer that drops trailing empty fields)."""
    found = spec.resolve(columns)
    essential = {found[f] for f in ESSENTIAL if f in found}
    return frozenset(i for i, name in enumerate(columns) if name not in essential)


def clock_columns(spec: FormatSpec, columns: list[str], delimiter: str, head: str, rows: int = 20) -> frozenset[int]:
    """The start and end time columns whose first ``rows`` rows all write ``HH:MM:SS`` (see ``read_body``)."""
    found = spec.resolve(columns)
    wanted = {columns.index(found[f]) for f in ("start_time", "end_time") if f in found}
    if not wanted:
        return frozenset()
    sample = list(itertools.islice(csv.reader(io.StringIO(head, newline=""), delimiter=delimiter), 1, rows + 1))
    if len(sample) < rows:  # a short file costs little either way; a cut-off last row could mislead
        return frozenset()
    return frozenset(i for i in wanted if all(i < len(r) and _CLOCK.fullmatch(r[i]) for r in sample))


def _spec(columns: list[str], format: str, mapping: dict[str, str] | None,  # noqa: A002
          duration_unit: str) -> FormatSpec:
    return mapped_spec(mapping, columns, duration_unit) if mapping else choose_spec(columns, format)


def export_format(data: bytes, *, format: str = "auto", mapping: dict[str, str] | None = None,  # noqa: A002
                  duration_unit: str = "auto") -> str:
    """The format ``read_timesheet`` reads ``data`` as, from its header alone (the tracker decides the
    zone an export's times are read in, so an importer asks before it reads the rows)."""
    return _spec(sniff_header(to_utf8(data).head()).columns, format, mapping, duration_unit).name


def read_timesheet(data: bytes, *, format: str = "auto", date_order: str | None = None,  # noqa: A002
                   timezone: str = "UTC", mapping: dict[str, str] | None = None,
                   duration_unit: str = "auto", max_bytes: int | None = DEFAULT_MAX_BYTES,
                   fingerprints: bool = True) -> tuple[pd.DataFrame, ReadReport]:
    """Parse a time-tracker export; see the module docstring for what raises and what is reported."""
    if max_bytes is not None and len(data) > max_bytes:
        raise CsvTooLarge(len(data), max_bytes)
    if data[:1] in (b"[", b"{") and data.lstrip()[:1] in (b"[", b"{"):
        raise UnreadableFile("This is a JSON file, not a CSV (for Watson, export with `watson log --csv`).")
    decoded = to_utf8(data)
    header = sniff_header(decoded.head())
    spec = _spec(header.columns, format, mapping, duration_unit)
    body = read_body(decoded.utf8, header.columns, header.delimiter, optional_columns(spec, header.columns),
                     clock_columns(spec, header.columns, header.delimiter, decoded.head()))
    body, total_notes = drop_total_rows(body, header.columns, spec)
    by_day = spec.name == "clockify-shared" and not {"client", "project"} & set(spec.resolve(header.columns))
    label = "Clockify summary report (by day)" if by_day else spec.label
    report = ReadReport(format=spec.name, format_label=label, explanation="", encoding=decoded.encoding,
                        delimiter=header.delimiter, columns=header.columns, timezone=timezone,
                        rows=body.table.num_rows + len(body.issues), blank_rows=body.blank_rows)
    if report.rows == 0:
        raise UnreadableFile("The file has a header row but no time entries.")
    try:
        result = normalise(body, header.columns, spec, date_order=date_order, timezone=timezone)
    except AmbiguousDateOrder as e:
        partial = e.report or {}
        report.total_seconds = partial.get("total_seconds") or 0
        report.entries = partial.get("entries") or 0
        report.explanation = f"{spec.label}; day/month order unknown"
        e.report = report
        raise
    frame = result.frame
    if fingerprints:
        frame = add_fingerprints(frame)
    describe(frame, report)
    report.errors = body.issues + result.issues
    report.warnings = [CLOCKIFY_BY_DAY] * by_day + total_notes + body.notes + result.warnings
    report.date_order = result.date_order
    parts = [label, f"dates {result.date_style}", result.time_style, f"durations {result.duration_style}",
             f"{decoded.encoding}, {DELIMITER_NAMES[header.delimiter]}-separated"] + result.details
    report.explanation = ", ".join(p for p in parts if p)
    return frame, report
