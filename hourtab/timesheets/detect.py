"""Which delimiter and which tracker: decided from the header row, explained in one sentence."""

from __future__ import annotations

import csv
import io
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
    seen: dict[str, int] = {}
    for i, name in enumerate(columns, start=1):
        key = header_key(name)
        if key and key in seen:
            raise CsvRowError(RowIssue(line=1, column=name, value=name,
                                       message=f"the header names column {name!r} twice (columns {seen[key]} and {i})",
                                       expected="each column name once"))
        seen[key] = i


def choose_spec(columns: list[str], fmt: str = "auto") -> FormatSpec:
    """The named spec (checked against the columns) or the best-scoring one."""
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
