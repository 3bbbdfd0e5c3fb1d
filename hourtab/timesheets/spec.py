"""What a tracker's export looks like, as data: which header names carry which field.

Every reader is one :class:`FormatSpec`; the normaliser is shared. A spec lists, per field, the
header names the tracker has used across versions and languages (matched case-insensitively),
and how its duration column is written. Mapped CSVs build a spec from the consultant's choices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Every field an entry can take from a file, in the order the mapping form shows them.
FIELDS = ("date", "start_date", "start_time", "end_date", "end_time", "start", "end", "duration",
          "client", "project", "task", "description", "tags", "billable", "user", "first_name", "last_name")

#: How a duration column is written: H:MM[:SS], decimal hours, either, minutes, seconds, or Kimai's guess.
DURATION_UNITS = ("clock", "hours", "auto", "minutes", "seconds", "kimai")


def header_key(name: str) -> str:
    """Compare header names the way a person reads them: case, spaces and BOM do not matter."""
    return " ".join(name.replace("\ufeff", "").strip().lower().split())


@dataclass(frozen=True)
class FormatSpec:
    name: str
    label: str
    aliases: dict[str, tuple[str, ...]]
    #: Fields that must all be present for the spec to apply (any alias).
    required: tuple[str, ...]
    #: Header keys of which at least one must be present (distinguishes look-alikes).
    marks: tuple[str, ...] = ()
    #: Header keys whose presence rules this spec out.
    excludes: tuple[str, ...] = ()
    #: Duration unit per duration alias (first alias present wins).
    duration_units: dict[str, str] = field(default_factory=dict)
    #: Dates separated by dots are day-first in every tracker we know.
    note: str = ""

    def resolve(self, columns: list[str]) -> dict[str, str]:
        """Field -> the file's own column name, for the fields this file has."""
        by_key = {header_key(c): c for c in columns}
        found: dict[str, str] = {}
        for fld, names in self.aliases.items():
            for alias in names:
                if alias in by_key:
                    found[fld] = by_key[alias]
                    break
        return found

    def duration_unit(self, column: str) -> str:
        return self.duration_units.get(header_key(column), "auto")

    def score(self, columns: list[str]) -> int:
        """How many of this spec's fields the file has; 0 when it cannot be this format."""
        keys = {header_key(c) for c in columns}
        if any(x in keys for x in self.excludes):
            return 0
        if self.marks and not any(m in keys for m in self.marks):
            return 0
        found = self.resolve(columns)
        if not all(r in found for r in self.required) or not has_time_source(found):
            return 0
        return len(found)


def has_time_source(found: dict[str, str]) -> bool:
    """An entry's length comes from a duration column, or from its start and end."""
    starts = any(f in found for f in ("start", "start_time"))
    ends = any(f in found for f in ("end", "end_time"))
    return "duration" in found or (starts and ends)
