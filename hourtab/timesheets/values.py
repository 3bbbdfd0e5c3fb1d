"""Vectorised parsers for the cells of a time sheet: durations, dates, times, booleans.

Each parser takes a whole column (a pyarrow string array) and returns numpy arrays plus a mask
of the cells it could not read, so one pass covers 100,000 rows without a Python loop per row.
Durations become whole seconds with integer arithmetic (decimal hours are rounded half-up from
their digits, never through a float). Dates are parsed once per distinct value, because an
export of any size holds only a few hundred distinct days.
"""

from __future__ import annotations

import datetime as dt
import re
import weakref
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EPOCH = dt.date(1970, 1, 1)

_DECIMAL = r"^\s*(?P<neg>-)?(?P<i>\d{0,9})(?:\.(?P<f>\d{1,12}))?\s*$"
_DATE = re.compile(r"^\s*(\d{1,4})([./-])(\d{1,2})\2(\d{1,4})\s*$")


@dataclass
class Parsed:
    """A parsed column: ``values`` where ``bad`` is False; ``empty`` marks blank cells."""

    values: np.ndarray
    bad: np.ndarray
    empty: np.ndarray


#: Arrays already null-free and trimmed, by id (weak: an entry leaves with its array, so an id
#: cannot be reused while it is here). Every parser trims its input, and most are handed columns
#: trimmed once by the normaliser; trimming again cost ~50 ms per 100,000-row read.
_TRIMMED: weakref.WeakValueDictionary[int, pa.Array] = weakref.WeakValueDictionary()


def _mark_trimmed(arr: pa.Array) -> pa.Array:
    _TRIMMED[id(arr)] = arr
    return arr


def _strings(arr: pa.Array) -> pa.Array:
    """The cells without nulls and surrounding whitespace (free for an array that is so already)."""
    if _TRIMMED.get(id(arr)) is arr:
        return arr
    if _has_nothing_to_trim(arr):
        return _mark_trimmed(arr)
    return _mark_trimmed(pc.utf8_trim_whitespace(arr.fill_null("")))


def _has_nothing_to_trim(arr: pa.Array) -> bool:
    """True when no cell is null and every non-empty cell starts and ends with printable ASCII
    other than a space (no whitespace, ASCII or Unicode, to trim): checked on two bytes per cell,
    about half the cost of trimming."""
    if not isinstance(arr, pa.StringArray) or arr.null_count or len(arr) == 0 or arr.buffers()[2] is None:
        return False
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], np.int32, count=n + 1, offset=arr.offset * 4)
    filled = offsets[1:] > offsets[:-1]
    data = np.frombuffer(arr.buffers()[2], np.uint8)
    first, last = data[offsets[:-1][filled]], data[offsets[1:][filled] - 1]
    return bool(((first - np.uint8(33) < 94) & (last - np.uint8(33) < 94)).all())


def _int_field(struct: pa.StructArray, name: str) -> np.ndarray:
    field = pc.struct_field(struct, name)
    field = pc.if_else(pc.equal(field, ""), "0", field).fill_null("0")
    return pc.cast(field, pa.int64()).to_numpy(zero_copy_only=False)


def is_empty(arr: pa.Array) -> np.ndarray:
    return pc.equal(pc.utf8_length(_strings(arr)), 0).to_numpy(zero_copy_only=False)


def _colon_numbers(s: pa.Array, pattern: str, hour_digits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                        np.ndarray]:
    """(matched, first, second, third) for ``a:b[:c]`` cells; split, not regex-captured, for speed.

    ``pattern`` must accept exactly the cells :func:`_fixed_colon_numbers` reads plus, at most,
    ones with one-digit minutes or seconds; ``hour_digits`` is its limit on the first number.
    """
    fast = _fixed_colon_numbers(s, hour_digits)
    if fast is not None:
        return fast
    matched = pc.match_substring_regex(s, pattern)
    safe = pc.if_else(matched, s, "0:0:0")
    two = pc.equal(pc.count_substring(safe, ":"), 1)
    safe = pc.if_else(two, pc.binary_join_element_wise(safe, "0", ":"), safe)
    parts = pc.split_pattern(safe, ":")
    numbers = [pc.cast(pc.list_element(parts, i), pa.int64()).to_numpy(zero_copy_only=False) for i in range(3)]
    return matched.to_numpy(zero_copy_only=False), *numbers


def _fixed_colon_numbers(s: pa.Array, hour_digits: int) -> tuple[np.ndarray, ...] | None:
    """The common case read straight from the bytes: every cell blank, ``H:MM:SS`` or ``H:MM``.

    Cells of one length form a byte matrix (a zero-copy reshape when all have the same length),
    in which the colons, minutes and seconds sit in fixed columns, so every check is one vector
    operation per column. Returns None (the caller then takes the regex path) as soon as one cell
    has another shape, so the result is always what the regex path gives.
    """
    n = len(s)
    if n == 0 or s.null_count or s.type != pa.string():
        return None
    offsets = np.frombuffer(s.buffers()[1], np.int32, count=n + 1, offset=s.offset * 4).astype(np.int64)
    lengths = np.diff(offsets)
    if lengths.max() > hour_digits + 6:
        return None
    data = np.frombuffer(s.buffers()[2], np.uint8) if s.buffers()[2] is not None else np.zeros(0, np.uint8)
    matched = np.zeros(n, bool)
    numbers = [np.zeros(n, np.int64) for _ in range(3)]
    for length in np.flatnonzero(np.bincount(lengths)).tolist():
        if length == 0:
            continue
        every = length * n == offsets[-1] - offsets[0]
        rows = slice(None) if every else np.flatnonzero(lengths == length)
        cells = (data[offsets[0]:offsets[-1]].reshape(n, length) if every
                 else data[offsets[:-1][rows, None] + np.arange(length)])
        found = _clock_cells(cells, hour_digits)
        if found is None:
            return None
        for out, part in zip((matched, *numbers), found, strict=True):
            out[rows] = part
    return matched, *numbers


def _clock_cells(cells: np.ndarray, hour_digits: int) -> tuple[np.ndarray, ...] | None:
    """(matched, hours, minutes, seconds) for a matrix of equally long cells, or None."""
    length = cells.shape[1]
    value = cells - np.uint8(48)  # digits become 0-9, every other byte wraps above 9
    digit = value <= 9

    def all_digits(columns: range) -> np.ndarray:
        out = np.ones(len(cells), bool)
        for col in columns:
            out &= digit[:, col]
        return out

    def number(columns: range) -> np.ndarray:
        out = np.zeros(len(cells), np.int64)
        for col in columns:
            out = out * 10 + value[:, col]
        return out

    zero = np.zeros(len(cells), bool)
    tail = (cells[:, length - 3] == 58) & all_digits(range(length - 2, length)) if length >= 4 else zero
    with_seconds = (tail & (cells[:, length - 6] == 58) & all_digits(range(length - 5, length - 3))
                    & all_digits(range(length - 6)) if 7 <= length <= hour_digits + 6 else zero)
    without = tail & all_digits(range(length - 3)) if 4 <= length <= hour_digits + 3 else zero
    if not (with_seconds | without).all():
        return None
    last = number(range(length - 2, length))
    if not with_seconds.any():
        return without, number(range(length - 3)), last, np.zeros(len(cells), np.int64)
    if not without.any():
        return with_seconds, number(range(length - 6)), number(range(length - 5, length - 3)), last
    return (with_seconds | without, np.where(with_seconds, number(range(length - 6)), number(range(length - 3))),
            np.where(with_seconds, number(range(length - 5, length - 3)), last), np.where(with_seconds, last, 0))


def clock_duration(arr: pa.Array) -> Parsed:
    """``H:MM:SS`` or ``H:MM`` (hours may exceed 24) to seconds; negative values stay negative."""
    # Replacing one non-space character by another keeps the cells trimmed.
    s = _mark_trimmed(pc.replace_substring(_strings(arr), "\u2212", "-"))
    neg = pc.starts_with(s, "-").to_numpy(zero_copy_only=False)
    body = pc.utf8_trim_whitespace(pc.utf8_ltrim(s, "-")) if neg.any() else s
    matched, h, mi, se = _colon_numbers(body, r"^\d{1,7}:\d{1,2}(:\d{1,2})?$", 7)
    seconds = h * 3600 + mi * 60 + se
    seconds = np.where(neg, -seconds, seconds)
    empty = is_empty(s)
    bad = ~matched | (mi > 59) | (se > 59)
    return Parsed(seconds, bad & ~empty, empty)


def decimal_separator(arr: pa.Array) -> str:
    """``,`` when the column writes decimal commas (``7,5``, ``2.000,0``), else ``.``."""
    s = _strings(arr)
    both = pc.and_(pc.match_substring(s, ","), pc.match_substring(s, "."))
    if pc.any(both).as_py():
        last_comma = pc.match_substring_regex(pc.filter(s, both), r",\d*$")
        return "," if pc.any(last_comma).as_py() else "."
    return "," if pc.any(pc.match_substring(s, ",")).as_py() else "."


def decimal_duration(arr: pa.Array, unit_seconds: int = 3600, sep: str | None = None) -> Parsed:
    """Decimal hours (or minutes/seconds with ``unit_seconds``) to whole seconds, exactly.

    ``7.25`` h is 7 * 3600 + round(25 * 3600 / 100): the digits are split and scaled as
    integers, so 0.1 h is 360 s on every machine, never 359.99999.
    """
    s = _strings(arr)
    sep = sep or decimal_separator(s)
    thousands = "." if sep == "," else ","
    s = pc.replace_substring(s, thousands, "")
    s = pc.replace_substring(s, "\u2212", "-")
    if sep == ",":
        s = pc.replace_substring(s, ",", ".")
    m = pc.extract_regex(s, _DECIMAL)
    matched = m.is_valid().to_numpy(zero_copy_only=False)
    frac_str = pc.struct_field(m, "f").fill_null("")
    integer = _int_field(m, "i")
    digits = pc.utf8_length(frac_str).to_numpy(zero_copy_only=False).astype(np.int64)
    frac = _int_field(pa.StructArray.from_arrays([frac_str], ["f"]), "f")
    scale = np.power(10, digits, dtype=np.int64)
    seconds = integer * unit_seconds + (2 * frac * unit_seconds + scale) // (2 * scale)
    neg = pc.not_equal(pc.struct_field(m, "neg").fill_null(""), "").to_numpy(zero_copy_only=False)
    seconds = np.where(neg, -seconds, seconds)
    empty = is_empty(s)
    no_digits = pc.equal(pc.utf8_length(pc.replace_substring_regex(s, r"[^0-9]", "")), 0).to_numpy(
        zero_copy_only=False)
    bad = ~matched | no_digits
    return Parsed(seconds, bad & ~empty, empty)


def any_duration(arr: pa.Array, sep: str | None = None) -> Parsed:
    """A column that may hold ``H:MM:SS`` or decimal hours (Clockify's ``Duration (h)``)."""
    clock = clock_duration(arr)
    has_colon = pc.match_substring(_strings(arr), ":").to_numpy(zero_copy_only=False)
    if has_colon.all():
        return clock
    dec = decimal_duration(arr, sep=sep)
    return Parsed(np.where(has_colon, clock.values, dec.values),
                  np.where(has_colon, clock.bad, dec.bad), clock.empty)


def times_of_day(arr: pa.Array) -> tuple[Parsed, bool, bool]:
    """``HH:MM[:SS]`` or ``h:MM[:SS] AM`` to seconds after midnight; (parsed, uses_12h, has_seconds)."""
    s = _strings(arr)
    fast = _fixed_colon_numbers(s, 2)
    twelve_fast = None if fast is not None else _fixed_twelve_hour(s)
    if fast is not None:  # only digits and colons: no AM/PM to read, nothing to upper-case or strip
        core = s
        pm = twelve = np.zeros(len(s), bool)
        matched, h, mi, se = fast
    elif twelve_fast is not None:
        core, pm, twelve, (matched, h, mi, se) = twelve_fast
    else:
        s = pc.utf8_upper(s)
        s = pc.replace_substring(pc.replace_substring(s, "A.M.", "AM"), "P.M.", "PM")
        pm = pc.ends_with(s, "PM").to_numpy(zero_copy_only=False)
        twelve = pm | pc.ends_with(s, "AM").to_numpy(zero_copy_only=False)
        core = pc.utf8_trim_whitespace(pc.replace_substring(pc.replace_substring(s, "PM", ""), "AM", ""))
        core = pc.replace_substring_regex(core, r"[.,]\d+$", "") if pc.any(pc.match_substring(core, ".")).as_py() \
            else core
        matched, h, mi, se = _colon_numbers(core, r"^\d{1,2}:\d{2}(:\d{2})?$", 2)
    bad_hour = np.where(twelve, (h < 1) | (h > 12), h > 23)
    hours = np.where(twelve, (h % 12) + np.where(pm, 12, 0), h)
    empty = is_empty(s)
    bad = (~matched | bad_hour | (mi > 59) | (se > 59)) & ~empty
    has_seconds = bool(pc.any(pc.equal(pc.count_substring(core, ":"), 2)).as_py() or False)
    return Parsed(hours * 3600 + mi * 60 + se, bad, empty), bool(twelve[~bad & ~empty].any()), has_seconds


def _fixed_twelve_hour(s: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray, tuple[np.ndarray, ...]] | None:
    """(core, pm, twelve, numbers) when every cell is blank or digits and colons then `` AM``/`` PM``.

    That is what Clockify writes for 12 h profiles; the general path (upper-casing, four
    replacements, a regex) gives the same for such cells, and is taken for any other shape.
    """
    n = len(s)
    if n == 0 or s.null_count or s.type != pa.string():
        return None
    offsets = np.frombuffer(s.buffers()[1], np.int32, count=n + 1, offset=s.offset * 4).astype(np.int64)
    ends, lengths = offsets[1:], np.diff(offsets)
    filled = lengths > 0
    if (lengths[filled] < 4).any() or s.buffers()[2] is None:
        return None
    data = np.frombuffer(s.buffers()[2], np.uint8)
    tail = ends[filled]
    if not ((data[tail - 3] == 32) & (data[tail - 1] == 77)).all():  # " ?M"
        return None
    letter = data[tail - 2]
    is_pm = letter == 80
    if not (is_pm | (letter == 65)).all():  # "P" or "A"
        return None
    core = pc.utf8_slice_codeunits(s, 0, -3)
    numbers = _fixed_colon_numbers(core, 2)
    if numbers is None:
        return None
    pm = np.zeros(n, bool)
    pm[filled] = is_pm
    return core, pm, filled, numbers


@dataclass(frozen=True)
class DateParts:
    """Distinct raw dates split into numbers, to decide the day/month order once per file."""

    raw: list[str]
    first: np.ndarray   # first number (day or month, or the year when ``iso``)
    second: np.ndarray
    year: np.ndarray
    iso: np.ndarray
    dots: np.ndarray
    ok: np.ndarray


def date_parts(values: list[str]) -> DateParts:
    n = len(values)
    first, second, year = (np.zeros(n, np.int64) for _ in range(3))
    iso, dots, ok = (np.zeros(n, bool) for _ in range(3))
    for i, v in enumerate(values):  # distinct values only: a few hundred per export
        m = _DATE.match(v)
        if not m:
            continue
        a, sep, b, c = m.groups()
        ok[i] = True
        dots[i] = sep == "."
        if len(a) == 4:
            iso[i], year[i], first[i], second[i] = True, int(a), int(b), int(c)
        elif len(c) in (2, 4):
            first[i], second[i], year[i] = int(a), int(b), int(c) + (2000 if len(c) == 2 else 0)
        else:
            ok[i] = False
    return DateParts(values, first, second, year, iso, dots, ok)


def dates_to_days(parts: DateParts, order: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Days since 1970 for each distinct value, and which are not real dates (31/02)."""
    n = len(parts.raw)
    days = np.zeros(n, np.int64)
    bad = np.zeros(n, bool)
    for i in range(n):
        if not parts.ok[i]:
            bad[i] = True
            continue
        if parts.iso[i]:
            y, mo, d = parts.year[i], parts.first[i], parts.second[i]
        elif order == "mdy":
            y, mo, d = parts.year[i], parts.first[i], parts.second[i]
        else:
            y, mo, d = parts.year[i], parts.second[i], parts.first[i]
        try:
            days[i] = (dt.date(int(y), int(mo), int(d)) - EPOCH).days
        except ValueError:
            bad[i] = True
    return days, bad


def order_evidence(parts: DateParts) -> tuple[bool, bool, bool]:
    """(day-first proven, month-first proven, order matters at all) from the distinct dates."""
    local = parts.ok & ~parts.iso
    dmy = bool((local & (parts.first > 12) & (parts.first <= 31)).any())
    mdy = bool((local & (parts.second > 12) & (parts.second <= 31)).any())
    matters = bool((local & (parts.first != parts.second)).any())
    return dmy, mdy, matters


def truthy(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(value, known) for Yes/No-style cells in several languages; blank is unknown."""
    s = pc.utf8_lower(_strings(arr))
    yes = pc.is_in(s, pa.array(["yes", "y", "true", "1", "ja", "oui", "si", "sí", "billable", "x"]))
    no = pc.is_in(s, pa.array(["no", "n", "false", "0", "nein", "non", "non-billable", "not billable"]))
    yes_np = yes.to_numpy(zero_copy_only=False)
    return yes_np, yes_np | no.to_numpy(zero_copy_only=False)
