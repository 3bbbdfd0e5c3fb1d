"""A first guess at a column mapping, from the header names and a few values of each column.

The consultant still confirms it; the guess only saves picking seventeen dropdowns by hand for
columns called Date, Client or Project, and tells decimal hours from H:MM durations by looking.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from hourtab.timesheets.detect import SPECS
from hourtab.timesheets.spec import FIELDS, header_key

SAMPLES = 3
#: Names people give columns in home-made sheets, beyond the trackers' own headers.
SYNONYMS = {
    "date": ("day", "datum", "work date", "spent date", "fecha"), "start": ("started", "start", "begin"),
    "end": ("ended", "end", "finish", "stop"), "duration": ("hours", "time", "duration", "spent", "time spent"),
    "client": ("client", "customer", "kunde", "company"), "project": ("project", "job", "matter"),
    "description": ("description", "notes", "note", "comment", "what", "details", "task description"),
    "task": ("task", "activity", "category"), "user": ("user", "person", "employee", "who", "member", "name"),
    "tags": ("tags", "labels"), "billable": ("billable", "billable?"),
}
_DATE = re.compile(r"^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}$")
_DATETIME = re.compile(r"^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}[T ]+\d{1,2}:\d{2}")
_CLOCK = re.compile(r"^-?\d{1,3}:\d{2}(:\d{2})?$")
_DECIMAL = re.compile(r"^-?\d{1,3}([.,]\d+)?$")


@dataclass(frozen=True)
class Suggestion:
    mapping: dict[str, str]           # field -> the file's column
    duration_unit: str                # "clock", "hours" or "auto"
    samples: dict[str, list[str]]     # column -> up to three non-empty values


def _by_name() -> dict[str, str]:
    names: dict[str, str] = {}
    for spec in SPECS.values():
        for fld, aliases in spec.aliases.items():
            for alias in aliases:
                names.setdefault(alias, fld)
    for fld, aliases in SYNONYMS.items():
        for alias in aliases:
            names.setdefault(alias, fld)
    return names


def samples_of(text: str, delimiter: str, columns: list[str], rows: int = 50) -> dict[str, list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    found: dict[str, list[str]] = {c: [] for c in columns}
    try:
        next(reader, None)
        for n, row in enumerate(reader):
            for column, value in zip(columns, row, strict=False):
                if value.strip() and len(found[column]) < SAMPLES:
                    found[column].append(value.strip())
            if n >= rows:
                break
    except csv.Error:
        pass
    return found


def _looks(values: list[str], pattern: re.Pattern[str]) -> bool:
    return bool(values) and all(pattern.match(v) for v in values)


def suggest(columns: list[str], samples: dict[str, list[str]]) -> Suggestion:
    names = _by_name()
    mapping: dict[str, str] = {}
    for column in columns:
        fld = names.get(header_key(column))
        if fld in FIELDS and fld not in mapping:
            mapping[fld] = column
    for column in columns:  # then by what the values look like, for columns the names left over
        if column in mapping.values():
            continue
        values = samples.get(column, [])
        if _looks(values, _DATETIME) and "start" not in mapping:
            mapping["start"] = column
        elif _looks(values, _DATE) and not {"date", "start_date", "start"} & set(mapping):
            mapping["date"] = column
        elif (_looks(values, _CLOCK) or _looks(values, _DECIMAL)) and "duration" not in mapping:
            mapping["duration"] = column
    unit = "auto"
    if "duration" in mapping:
        values = samples.get(mapping["duration"], [])
        unit = "clock" if _looks(values, _CLOCK) else "hours" if _looks(values, _DECIMAL) else "auto"
    return Suggestion(mapping, unit, samples)
