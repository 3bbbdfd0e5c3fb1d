"""Typed values from raw form fields, or a 400 that names the field.

For the few views that read ``request.form`` directly rather than through a WTForms form. Each
helper raises ``InvalidInput`` (HTTP 400 through ``app/errors.py``) with the field's name, so a
mistyped id or date never reaches ``int()`` or ``fromisoformat()`` unguarded.
"""

from __future__ import annotations

import datetime as dt

from flask import request

from hourtab.core.errors import InvalidInput

#: Ids are database integers: anything past a signed 64-bit value cannot name a row.
MAX_ID = 2**63 - 1


def _shown(value: str) -> str:
    return repr(value[:40] + ("…" if len(value) > 40 else ""))


def parse_id(name: str, value: str) -> int:
    text = value.strip()
    if not text.isascii() or not text.isdigit() or not 0 < int(text) <= MAX_ID:
        raise InvalidInput(f"The field '{name}' must be an id (a positive whole number), not {_shown(value)}.")
    return int(text)


def form_id(name: str) -> int | None:
    """An optional id field: empty or missing is ``None``."""
    value = request.form.get(name, "")
    return parse_id(name, value) if value.strip() else None


def form_ids(name: str) -> list[int]:
    return [parse_id(name, v) for v in request.form.getlist(name)]


def form_date(name: str) -> dt.date | None:
    value = request.form.get(name, "").strip()
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError as e:
        raise InvalidInput(f"The field '{name}' must be a date such as 2025-11-03, not {_shown(value)}.") from e


def form_datetime(name: str) -> dt.datetime | None:
    """A date and time as a browser's ``datetime-local`` sends it, taken as UTC."""
    value = request.form.get(name, "").strip()
    if not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError as e:
        raise InvalidInput(f"The field '{name}' must be a date and time such as 2025-11-03T14:30, "
                           f"not {_shown(value)}.") from e
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
