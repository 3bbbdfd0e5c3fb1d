"""Which delimiter and which tracker: decided from the header row, explained in one sentence."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from hourtab.timesheets.clockify import CLOCKIFY, CLOCKIFY_SHARED
from hourtab.timesheets.errors import CsvRowError, RowIssue, UnknownFormat, UnreadableFile
from hourtab.timesheets.harvest import HARVEST
from hourtab.timesheets.kimai import KIMAI
from hourtab.timesheets.spec import FormatSpec, header_key
from hourtab.timesheets.toggl import TOGGL

SPECS: dict[str, FormatSpec] = {s.name: s for s in (TOGGL, CLOCKIFY, CLOCKIFY_SHARED, HARVEST, KIMAI)}
FORMAT_NAMES = ("auto", *SPECS)
DELIMITERS = (",", ";", "\t")
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_KNOWN = {alias for spec in SPECS.values() for names in spec.aliases.values() for alias in names}
#: Header names that date an entry; a report with none of them holds totals, not entries.
_DATED = {alias for spec in SPECS.values() for f in ("date", "start_date", "start") for alias in spec.aliases.get(f, ())}
_TOTALS = {alias for spec in SPECS.values() for alias in spec.aliases.get("duration", ())} | {"time", "total"}
_GROUPS = {"project", "client", "user", "member", "title", "description", "task", "tags", "customer"}
#: Cells that are data, never a column name: dates, times of day, numbers and amounts ("NZD 48.75").
_DATE_OR_TIME = re.compile(r"^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}\b|^\d{1,2}:\d{2}(:\d{2})?(\s*[ap]\.?m\.?)?$", re.I)
_NUMBER = re.compile(r"^([a-z]{3}\s?)?[-+]?\d+([.,]\d+)*$", re.I)


@dataclass(frozen=True)
class Header:
    delimiter: str
    columns: list[str]


def _first_records(head: str, delimiter: str, n: int = 3) -> list[list[str]]:
    reader = csv.reader(io.StringIO(head, newline=""), delimiter=delimiter)
    rows: list[list[str]] = []
    try:
        for row in reader:
            if row:
                rows.append(row)
            if len(rows) >= n:
                break
    except csv.Error:
        pass
    return rows


def sniff_header(head: str) -> Header:
    """Pick the delimiter whose header names we recognise most, then the one giving most columns."""
    best: tuple[int, int, int, str] | None = None
    for delimiter in DELIMITERS:
        rows = _first_records(head, delimiter)
        if not rows:
            continue
        header = rows[0]
        known = sum(header_key(c) in _KNOWN for c in header)
        consistent = sum(len(r) == len(header) for r in rows[1:])
        key = (known, consistent, len(header), delimiter)
        if best is None or key[:3] > best[:3]:
            best = key
    if best is None:
        raise UnreadableFile("The file has no header row.")
    delimiter = best[3]
    columns = [c.replace("\ufeff", "").strip() for c in _first_records(head, delimiter, 1)[0]]
    _check_header(columns)
    return Header(delimiter, columns)


def _check_header(columns: list[str]) -> None:
    if not any(columns):
        raise UnreadableFile("The first line is empty; a CSV export starts with its column names.")
    if len(columns) == 1 and any(d in columns[0] for d in DELIMITERS):
        raise UnreadableFile(
            f"Each line of this file is one quoted text (the first is \"{columns[0][:60]}\"): a spreadsheet "
            "re-saved it as a single column. Export the CSV again from the time tracker, or split that "
            "column into columns before saving.")
    dated = [c for c in columns if _DATE_OR_TIME.match(c)]
    numbers = [c for c in columns if _NUMBER.match(c)]
    if (dated or len(numbers) >= 2) and not any(header_key(c) in _KNOWN for c in columns):
        shown = ", ".join(repr(c) for c in (dated + numbers)[:3])
        raise UnreadableFile(f"The file has no header line: its first line is already data ({shown}). Export "
                             "it again with the column names, or add them as the first line.")
    seen: dict[str, int] = {}
    for i, name in enumerate(columns, start=1):
        key = header_key(name)
        if key and key in seen:
            raise CsvRowError(RowIssue(line=1, column=name, value=name,
                                       message=f"the header names column {name!r} twice (columns {seen[key]} and {i})",
                                       expected="each column name once"))
        seen[key] = i


def refuse_summary(columns: list[str]) -> None:
    """A summary report lists totals per project or client with no dates: not time entries."""
    keys = {header_key(c) for c in columns}
    if not keys & _DATED and keys & _TOTALS and keys & _GROUPS:
        raise UnreadableFile("This is a summary report — export the Detailed report instead (a summary "
                             "holds totals per project or client, not time entries with their dates).")


def choose_spec(columns: list[str], fmt: str = "auto") -> FormatSpec:
    """The named spec (checked against the columns) or the best-scoring one."""
    refuse_summary(columns)
    if fmt != "auto":
        if fmt not in SPECS:
            raise UnknownFormat(columns, f"Unknown format {fmt!r}; choose one of {', '.join(FORMAT_NAMES)}.")
        spec = SPECS[fmt]
        found = spec.resolve(columns)
        missing = [r for r in spec.required if r not in found]
        if missing:
            wanted = ", ".join(spec.aliases[m][0].title() for m in missing)
            raise UnknownFormat(columns, f"A {spec.label} needs the column(s) {wanted}.")
        return spec
    scored = sorted(((s.score(columns), s.name) for s in SPECS.values()), reverse=True)
    if not scored or scored[0][0] == 0:
        raise UnknownFormat(columns, "It is not a Toggl, Clockify, Harvest or Kimai export.")
    return SPECS[scored[0][1]]
