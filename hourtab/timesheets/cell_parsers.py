"""Vectorised parsers for the cells of a time sheet: durations, dates, times, booleans.

Each parser takes a whole column of *trimmed* cells (a null-free pyarrow string array, as
:func:`trim` returns it; the normaliser trims every column once) and returns numpy arrays plus a
mask of the cells it could not read. The work is pyarrow.compute's: regex extraction for the
shape of a cell, integer casts for its numbers, ``strptime`` to validate dates. Durations become
whole seconds with integer arithmetic (decimal hours are rounded half-up from their digits,
never through a float). Dates are parsed once per distinct value, because an export of any size
holds only a few hundred distinct days.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EPOCH = dt.date(1970, 1, 1)

_DECIMAL = r"^(?P<neg>-)?(?P<i>\d{0,9})(?:\.(?P<f>\d{1,12}))?$"
_CLOCK = r"^(?P<neg>[-\x{2212}])?\s*(?P<h>\d{1,7}):(?P<m>\d{1,2})(?::(?P<s>\d{1,2}))?$"
# 24 h or 12 h, optional seconds and fraction of a second, AM/PM in any case, with or without dots.
_TIME = r"(?i)^(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?(?:[.,]\d+)?\s*(?:(?P<ap>[ap])\.?m\.?)?$"
_DATE = r"^(?P<a>\d{1,4})(?P<sep>[./-])(?P<b>\d{1,2})(?P<sep2>[./-])(?P<c>\d{1,4})$"


@dataclass
class Parsed:
    """A parsed column: ``values`` where ``bad`` is False; ``empty`` marks blank cells."""

    values: np.ndarray
    bad: np.ndarray
    empty: np.ndarray


def trim(arr: pa.Array) -> pa.Array:
    """The cells without nulls and surrounding whitespace: what every parser here expects."""
    return pc.utf8_trim_whitespace(arr.fill_null(""))


def may_hold_control(cells: pa.Array) -> bool:
    """False when no cell can hold a character XML forbids: no byte below 0x20 (those control
    characters, and tab and newline) and no 0xEF (which begins U+FFFE and U+FFFF in UTF-8).
    A numpy comparison over the column's bytes: far cheaper than the regex that answers exactly."""
    data = cells.buffers()[2] if len(cells) and cells.type == pa.string() else None
    if data is None:
        return bool(len(cells))
    raw = np.frombuffer(data, np.uint8)
    return bool((raw < 0x20).any() or (raw == 0xEF).any())


def any_cell_matches(cells: pa.Array, pattern: str) -> bool:
    """Whether ``pattern`` (one that cannot match across two cells, such as a character class)
    occurs in any cell: one regex search over the column's bytes instead of one per cell."""
    if len(cells) == 0:
        return False
    if cells.type != pa.string():
        return bool(pc.any(pc.match_substring_regex(cells, pattern)).as_py())
    offsets = np.frombuffer(cells.buffers()[1], np.int32)[cells.offset:cells.offset + len(cells) + 1]
    span = pa.py_buffer(np.array([offsets[0], offsets[-1]], np.int32).tobytes())
    whole = pa.Array.from_buffers(pa.string(), 1, [None, span, cells.buffers()[2]])
    return bool(pc.match_substring_regex(whole, pattern)[0].as_py())


def _numpy(arr: pa.Array) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def _int_field(struct: pa.StructArray, name: str) -> np.ndarray:
    """A captured group as integers (0 where it did not take part or the cell did not match)."""
    digits = pc.utf8_lpad(pc.struct_field(struct, name), 1, "0")  # "" -> "0"
    return _numpy(pc.cast(digits, pa.int64()).fill_null(0))


def is_empty(cells: pa.Array) -> np.ndarray:
    return _numpy(pc.equal(pc.utf8_length(cells), 0))


def clock_duration(cells: pa.Array) -> Parsed:
    """``H:MM:SS`` or ``H:MM`` (hours may exceed 24) to seconds; negative values stay negative."""
    m = pc.extract_regex(cells, _CLOCK)
    matched = _numpy(m.is_valid())
    h, mi, se = (_int_field(m, g) for g in ("h", "m", "s"))
    neg = _numpy(pc.not_equal(pc.struct_field(m, "neg").fill_null(""), ""))
    seconds = h * 3600 + mi * 60 + se
    empty = is_empty(cells)
    bad = ~matched | (mi > 59) | (se > 59)
    return Parsed(np.where(neg, -seconds, seconds), bad & ~empty, empty)


def decimal_separator(cells: pa.Array) -> str:
    """``,`` when the column writes decimal commas (``7,5``, ``2.000,0``), else ``.``."""
    both = pc.and_(pc.match_substring(cells, ","), pc.match_substring(cells, "."))
    if pc.any(both).as_py():
        last_comma = pc.match_substring_regex(pc.filter(cells, both), r",\d*$")
        return "," if pc.any(last_comma).as_py() else "."
    return "," if pc.any(pc.match_substring(cells, ",")).as_py() else "."


def decimal_duration(cells: pa.Array, unit_seconds: int = 3600, sep: str | None = None) -> Parsed:
    """Decimal hours (or minutes/seconds with ``unit_seconds``) to whole seconds, exactly.

    ``7.25`` h is 7 * 3600 + round(25 * 3600 / 100): the digits are split and scaled as
    integers, so 0.1 h is 360 s on every machine, never 359.99999.
    """
    sep = sep or decimal_separator(cells)
    s = pc.replace_substring(cells, "." if sep == "," else ",", "")
    s = pc.replace_substring(s, "\u2212", "-")
    if sep == ",":
        s = pc.replace_substring(s, ",", ".")
    m = pc.extract_regex(s, _DECIMAL)
    frac_str = pc.struct_field(m, "f").fill_null("")
    integer, frac = _int_field(m, "i"), _int_field(m, "f")
    scale = np.power(10, _numpy(pc.utf8_length(frac_str)).astype(np.int64), dtype=np.int64)
    seconds = integer * unit_seconds + (2 * frac * unit_seconds + scale) // (2 * scale)
    neg = _numpy(pc.not_equal(pc.struct_field(m, "neg").fill_null(""), ""))
    no_digits = _numpy(pc.invert(pc.match_substring_regex(s, r"\d")))
    empty = is_empty(cells)
    bad = ~_numpy(m.is_valid()) | no_digits
    return Parsed(np.where(neg, -seconds, seconds), bad & ~empty, empty)


def any_duration(cells: pa.Array, sep: str | None = None) -> Parsed:
    """A column that may hold ``H:MM:SS`` or decimal hours (Clockify's ``Duration (h)``)."""
    clock = clock_duration(cells)
    has_colon = _numpy(pc.match_substring(cells, ":"))
    if has_colon.all():
        return clock
    dec = decimal_duration(cells, sep=sep)
    return Parsed(np.where(has_colon, clock.values, dec.values),
                  np.where(has_colon, clock.bad, dec.bad), clock.empty)


def _fixed_times(cells: pa.Array) -> tuple[Parsed, bool, bool] | None:
    """The common case of ``times_of_day``, every cell ``HH:MM:SS`` (or blank), read by position.

    A match without groups runs in RE2's fast automaton; extracting groups does not, and it was
    most of the time spent on a file's times. Same answer as the general reading below."""
    if not pc.all(pc.match_substring_regex(cells, r"^(\d\d:\d\d:\d\d)?$")).as_py():
        return None
    empty = is_empty(cells)
    filled = pc.if_else(pa.array(empty), "00:00:00", cells)
    h, mi, se = (_numpy(pc.cast(pc.utf8_slice_codeunits(filled, i, i + 2), pa.int64())) for i in (0, 3, 6))
    bad = ((h > 23) | (mi > 59) | (se > 59)) & ~empty
    return Parsed(h * 3600 + mi * 60 + se, bad, empty), False, bool((~empty).any())


def times_of_day(cells: pa.Array) -> tuple[Parsed, bool, bool]:
    """``HH:MM[:SS]`` or ``h:MM[:SS] AM`` to seconds after midnight; (parsed, uses_12h, has_seconds)."""
    if (fixed := _fixed_times(cells)) is not None:
        return fixed
    m = pc.extract_regex(cells, _TIME)
    matched = _numpy(m.is_valid())
    h, mi, se = (_int_field(m, g) for g in ("h", "m", "s"))
    ap = pc.utf8_lower(pc.struct_field(m, "ap").fill_null(""))
    twelve = _numpy(pc.not_equal(ap, ""))
    pm = _numpy(pc.equal(ap, "p"))
    bad_hour = np.where(twelve, (h < 1) | (h > 12), h > 23)
    hours = np.where(twelve, (h % 12) + np.where(pm, 12, 0), h)
    empty = is_empty(cells)
    bad = (~matched | bad_hour | (mi > 59) | (se > 59)) & ~empty
    has_seconds = bool(pc.any(pc.not_equal(pc.struct_field(m, "s").fill_null(""), "")).as_py())
    return Parsed(hours * 3600 + mi * 60 + se, bad, empty), bool(twelve[~bad & ~empty].any()), has_seconds


@dataclass(frozen=True)
class DateParts:
    """Distinct raw dates split into numbers, to decide the day/month order once per file."""

    raw: list[str]
    first: np.ndarray   # first number (day or month, or the month when ``iso``)
    second: np.ndarray
    year: np.ndarray
    iso: np.ndarray
    dots: np.ndarray
    ok: np.ndarray


def date_parts(values: list[str]) -> DateParts:
    m = pc.extract_regex(pa.array(values, pa.string()), _DATE)
    a_len = _numpy(pc.utf8_length(pc.struct_field(m, "a").fill_null("")))
    c_len = _numpy(pc.utf8_length(pc.struct_field(m, "c").fill_null("")))
    a, b, c = (_int_field(m, g) for g in ("a", "b", "c"))
    iso = a_len == 4
    same_sep = _numpy(pc.equal(pc.struct_field(m, "sep").fill_null(""), pc.struct_field(m, "sep2").fill_null("")))
    ok = _numpy(m.is_valid()) & same_sep & (iso | (c_len == 2) | (c_len == 4))
    year = np.where(iso, a, c + np.where(c_len == 2, 2000, 0))
    dots = _numpy(pc.equal(pc.struct_field(m, "sep").fill_null(""), "."))
    return DateParts(values, np.where(iso, b, a), np.where(iso, c, b), year, iso & ok, dots & ok, ok)


def dates_to_days(parts: DateParts, order: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Days since 1970 for each distinct value, and which are not real dates (31/02)."""
    if not len(parts.raw):
        return np.zeros(0, np.int64), np.zeros(0, bool)
    month_first = parts.iso | (order == "mdy")
    month = np.where(month_first, parts.first, parts.second)
    day = np.where(month_first, parts.second, parts.first)
    iso = np.char.add(np.char.add(np.char.zfill(parts.year.astype(str), 4), "-"),
                      np.char.add(np.char.add(np.char.zfill(month.astype(str), 2), "-"),
                                  np.char.zfill(day.astype(str), 2)))
    text = pa.array(iso.astype(object), pa.string())
    stamps = pc.strptime(text, format="%Y-%m-%d", unit="s", error_is_null=True)
    # strptime rolls 31 Feb over into March: a date is real only when it reads back unchanged.
    real = pc.fill_null(pc.equal(pc.strftime(stamps, format="%Y-%m-%d"), text), False)
    bad = ~_numpy(real) | ~parts.ok
    days = _numpy(pc.cast(pc.cast(stamps, pa.date32()), pa.int32()).fill_null(0)).astype(np.int64)
    return np.where(bad, 0, days), bad


def order_evidence(parts: DateParts) -> tuple[bool, bool, bool]:
    """(day-first proven, month-first proven, order matters at all) from the distinct dates."""
    local = parts.ok & ~parts.iso
    dmy = bool((local & (parts.first > 12) & (parts.first <= 31)).any())
    mdy = bool((local & (parts.second > 12) & (parts.second <= 31)).any())
    matters = bool((local & (parts.first != parts.second)).any())
    return dmy, mdy, matters


def truthy(cells: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(value, known) for Yes/No-style cells in several languages; blank is unknown."""
    s = pc.utf8_lower(cells)
    yes = _numpy(pc.is_in(s, pa.array(["yes", "y", "true", "1", "ja", "oui", "si", "sí", "billable", "x"])))
    no = _numpy(pc.is_in(s, pa.array(["no", "n", "false", "0", "nein", "non", "non-billable", "not billable"])))
    return yes, yes | no
