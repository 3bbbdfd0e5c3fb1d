"""Any other CSV, read through a column mapping the consultant chose (an import profile)."""

from __future__ import annotations

from hourtab.timesheets.errors import MappingInvalid
from hourtab.timesheets.spec import DURATION_UNITS, FIELDS, FormatSpec, header_key


def mapped_spec(mapping: dict[str, str], columns: list[str], duration_unit: str = "auto") -> FormatSpec:
    """A spec whose only alias per field is the column the consultant picked.

    Refuses mappings that name columns the file lacks or cannot yield a date and a duration,
    so a bad profile fails before any row is read.
    """
    mapping = {k: v for k, v in mapping.items() if v}
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise MappingInvalid(f"Unknown fields in the mapping: {', '.join(unknown)}.")
    keys = {header_key(c) for c in columns}
    missing = [v for v in mapping.values() if header_key(v) not in keys]
    if missing:
        raise MappingInvalid(f"The file has no column named {', '.join(repr(m) for m in missing)}.")
    if duration_unit not in DURATION_UNITS:
        raise MappingInvalid(f"Unknown duration unit {duration_unit!r}; choose one of {', '.join(DURATION_UNITS)}.")
    has_date = any(f in mapping for f in ("date", "start_date", "start"))
    has_duration = "duration" in mapping or (
        any(f in mapping for f in ("start", "start_time")) and any(f in mapping for f in ("end", "end_time")))
    if not has_date or not has_duration:
        raise MappingInvalid("Map at least a date (or start) column and a duration (or start and end) column.")
    return FormatSpec(
        name="mapped",
        label="Mapped CSV",
        aliases={f: (header_key(c),) for f, c in mapping.items()},
        required=tuple(mapping),
        duration_units={header_key(mapping["duration"]): duration_unit} if "duration" in mapping else {},
    )
