"""From a tracker's string columns to normalised entries: exact seconds, dates, UTC times.

Everything here is column-at-a-time. Problems are gathered as masks and only the bad rows are
turned into :class:`RowIssue` objects, so a clean 100,000-row file never builds 100,000 messages.
The duration column is authoritative (it is what the tracker totals); start and end are kept for
the record and checked against it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hourtab.core.values import XML_FORBIDDEN_RE2
from hourtab.timesheets import values as V
from hourtab.timesheets.cells import Cells
from hourtab.timesheets.errors import AmbiguousDateOrder, DateReading, RowIssue, TimesheetError
from hourtab.timesheets.spec import FormatSpec
from hourtab.timesheets.table import Body

#: Duration and start/end may differ by this much (trackers round to the second differently).
TOLERANCE_S = 60
LONG_ENTRY_S = 24 * 3600
MAX_WARNINGS_PER_KIND = 20
DATE_ORDERS = ("dmy", "mdy")

ENTRY_COLUMNS = ("line", "start_at", "end_at", "local_date", "timezone", "duration_s", "client", "project",
                 "task", "description", "tags", "billable", "user_name", "source_format")


@dataclass
class Normalised:
    frame: pd.DataFrame
    issues: list[RowIssue]
    warnings: list[str]
    date_order: str | None
    date_style: str
    time_style: str
    duration_style: str
    bad_rows: int = 0
    total_seconds_all: int = 0
    details: list[str] = field(default_factory=list)


def check_timezone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise TimesheetError(f"Unknown time zone {name!r}; use an IANA name such as Europe/Berlin.") from e


class _Problems:
    """Row masks with what went wrong; materialised into RowIssues only for the bad rows."""

    def __init__(self, n: int, lines: np.ndarray) -> None:
        self.n = n
        self.lines = lines
        self.bad = np.zeros(n, bool)
        self._items: list[tuple[np.ndarray, str, str, str, Cells | None]] = []

    def add(self, mask: np.ndarray, column: str, message: str, expected: str, cells: Cells | None) -> None:
        mask = np.asarray(mask, bool) & ~self.bad_for_column(column)
        if mask.any():
            self.bad |= mask
            self._items.append((mask, column, message, expected, cells))

    def bad_for_column(self, column: str) -> np.ndarray:
        out = np.zeros(self.n, bool)
        for mask, col, *_ in self._items:
            if col == column:
                out |= mask
        return out

    def issues(self) -> list[RowIssue]:
        found: list[RowIssue] = []
        for mask, column, message, expected, cells in self._items:
            idx = np.flatnonzero(mask)
            values = cells.take(idx) if cells is not None else [""] * len(idx)
            found.extend(RowIssue(line=int(self.lines[i]), column=column, value=str(v or "")[:120],
                                  message=message, expected=expected) for i, v in zip(idx, values, strict=True))
        found.sort(key=lambda issue: (issue.line or 0, issue.column))
        return found


class _Warnings:
    def __init__(self, lines: np.ndarray) -> None:
        self.lines = lines
        self.items: list[str] = []

    def add(self, mask: np.ndarray, text) -> None:
        idx = np.flatnonzero(mask)
        for i in idx[:MAX_WARNINGS_PER_KIND]:
            self.items.append(f"line {int(self.lines[i])}: {text(i)}")
        if len(idx) > MAX_WARNINGS_PER_KIND:
            self.items.append(f"… and {len(idx) - MAX_WARNINGS_PER_KIND} more like these")


def hms(seconds: int) -> str:
    sign = "-" if seconds < 0 else ""
    seconds = abs(int(seconds))
    return f"{sign}{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def normalise(body: Body, columns: list[str], spec: FormatSpec, *, date_order: str | None = None,
              timezone: str = "UTC") -> Normalised:
    tz = check_timezone(timezone)
    table, lines, n = body.table, body.lines, body.table.num_rows
    found = spec.resolve(columns)
    index = {name: i for i, name in enumerate(columns)}

    def column_cells(name: str) -> Cells:
        """A column's distinct cells, trimmed, encoded once per read (see ``cells``)."""
        return body.cells(index[name])

    def cells(fld: str) -> Cells | None:
        return column_cells(found[fld]) if fld in found else None

    problems = _Problems(n, lines)
    warnings = _Warnings(lines)
    _repeated_header(problems, table, found, column_cells)

    # --- dates and times -------------------------------------------------------------------------
    start_dt, end_dt = _split_datetime(cells("start")), _split_datetime(cells("end"))
    # (source column, cells) per field; a combined start or end column gives both parts and wins.
    date_cols: dict[str, tuple[str, Cells]] = {}
    time_cols: dict[str, tuple[str, Cells]] = {}
    read_as_times: dict[str, pa.Array] = {}  # columns the CSV reader read as times already (``read_body``)
    for fld, cols in (("date", date_cols), ("start_date", date_cols), ("end_date", date_cols),
                      ("start_time", time_cols), ("end_time", time_cols)):
        column = table.column(index[found[fld]]) if fld in found else None
        if column is not None and pa.types.is_time(column.type):
            read_as_times[fld] = column.combine_chunks()
            cols[fld] = (found[fld], _LazyCells(lambda i=index[found[fld]]: body.cells(i)))
        elif (arr := cells(fld)) is not None:
            cols[fld] = (found[fld], arr)
    for side, parts in (("start", start_dt), ("end", end_dt)):
        if parts is not None:
            date_cols[f"{side}_date"] = (found[side], parts[0])
            time_cols[f"{side}_time"] = (found[side], parts[1])

    times: dict[str, V.Parsed] = {}
    twelve = seconds_shown = False
    for fld, (col, arr) in time_cols.items():
        if fld in read_as_times:
            parsed, uses12, has_s = _read_times(read_as_times[fld])
        else:
            parsed, uses12, has_s = V.times_of_day(arr.values)
            parsed = arr.parsed(parsed)
        times[fld] = parsed
        twelve |= uses12
        seconds_shown |= has_s
        problems.add(parsed.bad, col, "not a time of day", "HH:MM, HH:MM:SS or h:MM AM/PM", arr)

    # --- duration --------------------------------------------------------------------------------
    duration_col = found.get("duration")
    dur_cells = cells("duration")
    duration: V.Parsed | None = None
    duration_style = "start and end"
    if dur_cells is not None:
        unit = spec.duration_unit(duration_col)
        duration, duration_style = _parse_duration(dur_cells.values, unit)
        duration = dur_cells.parsed(duration)
        problems.add(duration.bad, duration_col, "not a duration",
                     "H:MM:SS, H:MM or decimal hours" if unit != "seconds" else "whole seconds", dur_cells)

    # --- date order ------------------------------------------------------------------------------
    # One dictionary encoding per date column gives both its distinct values and, below, each row's.
    distinct: list[str] = sorted({v for _, arr in date_cols.values() for v in arr.values.to_pylist() if v})
    parts = V.date_parts(distinct)
    order, date_style, why = _decide_order(parts, date_order)
    if order is None and "end_date" in date_cols and "start_date" in date_cols and duration is not None:
        order, why = _order_from_midnight(parts, distinct, date_cols, times, duration)
    if order is None:
        examples = _readings(parts)
        raise AmbiguousDateOrder([date_cols[f][0] for f in date_cols], examples,
                                 report=_partial(duration, problems, n))
    date_style = _date_style(parts, order)
    days_by_value, bad_by_value = V.dates_to_days(parts, order)
    known = pa.array(distinct, pa.string())

    def day_numbers(arr: Cells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(day number, bad, empty) per row, worked out per distinct value and then spread."""
        empty = V.is_empty(arr.values)
        which = pc.index_in(arr.values, value_set=known).fill_null(-1).to_numpy(zero_copy_only=False)
        ok = which >= 0
        days = np.where(ok, days_by_value[np.maximum(which, 0)], 0)
        bad = ~empty & (~ok | bad_by_value[np.maximum(which, 0)])
        return arr.rows(days), arr.rows(bad), arr.rows(empty)

    days: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    expected_date = f"a real date written {date_style}"
    for fld, (col, arr) in date_cols.items():
        days[fld] = day_numbers(arr)
        problems.add(days[fld][1], col, "not a valid date", expected_date, arr)

    day_field = "start_date" if "start_date" in days else "date"
    day, _, day_empty = days[day_field]
    problems.add(day_empty, date_cols[day_field][0], "the date is missing", expected_date, date_cols[day_field][1])

    # --- start, end, span ------------------------------------------------------------------------
    start_tod = times.get("start_time")
    end_tod = times.get("end_time")
    timed = np.zeros(n, bool) if start_tod is None else ~start_tod.empty & ~start_tod.bad
    has_end = np.zeros(n, bool) if end_tod is None else ~end_tod.empty & ~end_tod.bad & timed
    start_local = day * 86400 + (start_tod.values if start_tod is not None else 0)
    if "end_date" in days:
        end_day, _, end_day_empty = days["end_date"]
        end_day = np.where(end_day_empty, day, end_day)
        explicit_end_day = ~end_day_empty
    else:
        end_day = day
        explicit_end_day = np.zeros(n, bool)
    end_local = end_day * 86400 + (end_tod.values if end_tod is not None else 0)
    crossed = has_end & ~explicit_end_day & (end_local < start_local)
    end_local = np.where(crossed, end_local + 86400, end_local)
    backwards = has_end & explicit_end_day & (end_local < start_local)
    if end_tod is not None:
        problems.add(backwards, time_cols["end_time"][0], "the entry ends before it starts",
                     "an end at or after the start", time_cols["end_time"][1])

    start_utc = _to_utc(start_local, timed, tz)
    end_utc = _to_utc(end_local, has_end, tz)
    span = np.where(has_end, (end_utc - start_utc) // 1_000_000_000, 0) if n else np.zeros(0, np.int64)

    if duration is None:
        seconds = span
        if "start_time" in time_cols and "end_time" in time_cols:
            duration_style = f"from {time_cols['start_time'][0]} to {time_cols['end_time'][0]}"
        problems.add(~has_end, time_cols.get("end_time", time_cols.get("start_time", ("", None)))[0],
                     "start or end time is missing", "a start and an end time", None)
    else:
        if spec.duration_unit(duration_col) == "kimai" and _looks_like_seconds(dur_cells, span, has_end):
            duration = dur_cells.parsed(V.decimal_duration(dur_cells.values, unit_seconds=1))
            agree = int(((np.abs(duration.values - span) <= TOLERANCE_S) & has_end).sum())
            duration_style = (f"in whole seconds ({agree} of {int(has_end.sum())} agree with "
                              f"{time_cols['start_time'][0]} to {time_cols['end_time'][0]})"
                              if has_end.any() else "in whole seconds")
        use_span = duration.empty & has_end
        seconds = np.where(use_span, span, duration.values)
        problems.add(duration.empty & ~has_end, duration_col, "the duration is missing",
                     "a duration such as 1:30:00 or 1.5", dur_cells)
        problems.add((seconds < 0) & ~duration.bad, duration_col, "the duration is negative",
                     "a duration of zero or more", dur_cells)
        disagree = has_end & ~use_span & ~duration.bad & (np.abs(seconds - span) > TOLERANCE_S) & ~problems.bad
        warnings.add(disagree, lambda i: f"duration {hms(seconds[i])} but start to end is {hms(span[i])}; "
                                         "the duration is used")
    warnings.add((seconds > LONG_ENTRY_S) & ~problems.bad,
                 lambda i: f"an entry of {hms(seconds[i])}, longer than a day (a timer left running?)")

    # --- text fields -----------------------------------------------------------------------------
    empty = pa.nulls(n, pa.string()).fill_null("")

    def clean(fld: str) -> pa.Array:
        """The field's trimmed cells without the characters XML forbids (an e-mail or PDF would break)."""
        if fld not in found:
            return empty
        name = found[fld]
        if body.has_cells(index[name]) or fld == "tags":  # encoded already, or few distinct values
            cleaned = column_cells(name).map(_xml_safe)
            return (cleaned.map(lambda v: pc.replace_substring_regex(v, r"\s*,\s*", ", ")) if fld == "tags"
                    else cleaned).full()
        return _xml_safe(V.trim(table.column(index[name]).combine_chunks()))

    text = {f: clean(f) for f in ("client", "project", "task", "description", "tags")}
    if "user" in found:
        user = clean("user")
    elif "first_name" in found or "last_name" in found:
        user = pc.replace_substring_regex(pc.utf8_trim_whitespace(pc.binary_join_element_wise(
            cells("first_name").full() if "first_name" in found else empty,
            cells("last_name").full() if "last_name" in found else empty, " ")), XML_FORBIDDEN_RE2, "")
    else:
        user = empty
    if "billable" in found:
        bill = cells("billable")
        yes, known = V.truthy(bill.values)
        billable = pd.arrays.BooleanArray(bill.rows(yes), ~bill.rows(known))
    else:
        billable = pd.array([pd.NA] * n, dtype="boolean")

    ok = ~problems.bad
    utc_start = _utc_index(np.where(timed, start_utc, np.iinfo(np.int64).min))
    utc_end = _utc_index(np.where(has_end, end_utc, np.iinfo(np.int64).min))
    no_end_but_timed = timed & ~has_end
    utc_end = utc_end.where(~no_end_but_timed, utc_start + pd.to_timedelta(seconds, unit="s"))
    frame = pd.DataFrame({
        "line": lines.astype(np.int64),
        "start_at": utc_start,
        "end_at": utc_end,
        "local_date": (day * 86400).astype("datetime64[s]"),
        "timezone": _repeated(timezone, n),
        "duration_s": seconds.astype(np.int64),
        **{k: pd.Series(v.to_pandas(), dtype="str") if n else pd.Series([], dtype="str")
           for k, v in text.items()},
        "billable": billable,
        "user_name": pd.Series(user.to_pandas(), dtype="str") if n else pd.Series([], dtype="str"),
        "source_format": _repeated(spec.name, n),
    })
    if not ok.all():
        frame = frame.loc[ok].reset_index(drop=True)
    time_style = ("12 h times" if twelve else "24 h times") + ("" if seconds_shown or not time_cols else
                                                              " without seconds")
    issues = problems.issues()
    return Normalised(frame=frame, issues=issues, warnings=warnings.items, date_order=order,
                      date_style=date_style, time_style=time_style if time_cols else "no times",
                      duration_style=duration_style, bad_rows=int(problems.bad.sum()),
                      details=[why] if why else [])


class _LazyCells:
    """A column's cells, encoded only if a problem in it has to show a value."""

    def __init__(self, make) -> None:
        self._make = make

    def take(self, rows: np.ndarray) -> list[str]:
        return self._make().take(rows)


def _read_times(column: pa.Array) -> tuple[V.Parsed, bool, bool]:
    """``times_of_day``'s answer for a column pyarrow read as ``time32[s]`` (every cell HH:MM:SS or blank)."""
    empty = column.is_null().to_numpy(zero_copy_only=False)
    seconds = pc.cast(column, pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return V.Parsed(seconds, np.zeros(len(column), bool), empty), False, bool((~empty).any())


def _repeated_header(problems: _Problems, table: pa.Table, found: dict[str, str], column_cells) -> None:
    """Two exports pasted together leave a second header row in the data."""
    names = list(dict.fromkeys(found.values()))[:3]
    if not names or table.num_rows == 0:
        return
    mask = np.ones(table.num_rows, bool)
    for name in names:
        found_cells = column_cells(name)
        mask &= found_cells.rows(pc.equal(found_cells.values, name).to_numpy(zero_copy_only=False))
    problems.add(mask, "", "the row repeats the header (two exports pasted together?)",
                 "time entries only after the first line", None)


def _split_datetime(arr: Cells | None) -> tuple[Cells, Cells] | None:
    if arr is None:
        return None
    m = pc.extract_regex(arr.values, r"^\s*(?P<d>\d{1,4}[./-]\d{1,2}[./-]\d{1,4})(?:[T ]+(?P<t>.*?))?\s*$")
    return (Cells(pc.struct_field(m, "d").fill_null(arr.values), arr.codes),
            Cells(pc.struct_field(m, "t").fill_null(""), arr.codes))


def _parse_duration(arr: pa.Array, unit: str) -> tuple[V.Parsed, str]:
    if unit == "clock":
        return V.clock_duration(arr), "H:MM:SS"
    if unit == "hours":
        sep = V.decimal_separator(arr)
        return V.decimal_duration(arr, sep=sep), f"decimal hours ('{sep}' decimal separator)"
    if unit == "minutes":
        return V.decimal_duration(arr, unit_seconds=60), "minutes"
    if unit == "seconds":
        return V.decimal_duration(arr, unit_seconds=1), "seconds"
    has_colon = pc.any(pc.match_substring(arr, ":")).as_py()
    all_colon = pc.all(pc.or_(pc.match_substring(arr, ":"), pc.equal(arr, ""))).as_py()
    if all_colon:
        return V.clock_duration(arr), "H:MM:SS"
    sep = V.decimal_separator(arr)
    style = "decimal hours" if not has_colon else "H:MM:SS and decimal hours"
    return V.any_duration(arr, sep=sep), f"{style} ('{sep}' decimal separator)"


def _looks_like_seconds(arr: Cells, span: np.ndarray, has_end: np.ndarray) -> bool:
    """Kimai's export writes whole seconds (older versions and the API); decided from the entry
    rows: whole numbers that fit start to end better as seconds than as hours."""
    distinct = arr.values
    if not pc.all(pc.or_(pc.match_substring_regex(distinct, r"^\d+$"), pc.equal(distinct, ""))).as_py():
        return False
    as_int = arr.rows(V.decimal_duration(distinct, unit_seconds=1).values)
    if not has_end.any():
        return bool((as_int > 24).any())
    as_seconds = (np.abs(as_int - span) <= TOLERANCE_S)[has_end].mean()
    as_hours = (np.abs(as_int * 3600 - span) <= TOLERANCE_S)[has_end].mean()
    return bool(as_seconds >= as_hours and (as_seconds > 0 or (as_int > 24).any()))


def _decide_order(parts: V.DateParts, requested: str | None) -> tuple[str | None, str, str]:
    if requested:
        if requested not in DATE_ORDERS:
            raise TimesheetError(f"Unknown date order {requested!r}; choose dmy or mdy.")
        return requested, "", "date order chosen by you"
    dmy, mdy, matters = V.order_evidence(parts)
    local = parts.ok & ~parts.iso
    if dmy and not mdy:
        return "dmy", "", ""
    if mdy and not dmy:
        return "mdy", "", ""
    if dmy and mdy:
        first = int((local & (parts.first > 12)).sum())
        second = int((local & (parts.second > 12)).sum())
        return ("dmy" if first >= second else "mdy"), "", "dates mix day-first and month-first; the rest are errors"
    if not local.any() or not matters:
        return "dmy", "", ""
    if parts.dots[local].all():
        return "dmy", "", "dot-separated dates are day-first"
    return None, "", ""


def _order_from_midnight(parts, distinct, date_cols, times, duration) -> tuple[str | None, str]:
    """When start and end dates differ, only one reading makes end − start match the duration."""
    start_arr, end_arr = date_cols["start_date"][1].full(), date_cols["end_date"][1].full()
    differ = pc.not_equal(start_arr, end_arr).to_numpy(zero_copy_only=False)
    if not differ.any() or "start_time" not in times or "end_time" not in times:
        return None, ""
    lookup = {v: i for i, v in enumerate(distinct)}
    fits = {}
    for order in DATE_ORDERS:
        days, bad = V.dates_to_days(parts, order)
        s_idx = np.array([lookup.get(v, -1) for v in pc.filter(start_arr, pa.array(differ)).to_pylist()])
        e_idx = np.array([lookup.get(v, -1) for v in pc.filter(end_arr, pa.array(differ)).to_pylist()])
        if (s_idx < 0).any() or (e_idx < 0).any() or bad[s_idx].any() or bad[e_idx].any():
            fits[order] = False
            continue
        span = ((days[e_idx] - days[s_idx]) * 86400 + times["end_time"].values[differ]
                - times["start_time"].values[differ])
        fits[order] = bool((np.abs(span - duration.values[differ]) <= TOLERANCE_S).all())
    if fits["dmy"] != fits["mdy"]:
        order = "dmy" if fits["dmy"] else "mdy"
        return order, "day/month order taken from entries that cross midnight"
    return None, ""


def _readings(parts: V.DateParts) -> list[DateReading]:
    out = []
    idx = np.flatnonzero(parts.ok & ~parts.iso & (parts.first != parts.second))
    dmy_days, dmy_bad = V.dates_to_days(parts, "dmy")
    mdy_days, mdy_bad = V.dates_to_days(parts, "mdy")

    def show(i: int, days: np.ndarray, bad: np.ndarray) -> str | None:
        return None if bad[i] else (V.EPOCH + dt.timedelta(days=int(days[i]))).strftime("%-d %B %Y")

    for i in idx[:5]:
        out.append(DateReading(parts.raw[i], show(i, dmy_days, dmy_bad), show(i, mdy_days, mdy_bad)))
    return out


def _date_style(parts: V.DateParts, order: str) -> str:
    local = np.flatnonzero(parts.ok & ~parts.iso)
    if len(local) == 0:
        return "YYYY-MM-DD"
    sample = parts.raw[local[0]].strip()
    sep = "." if "." in sample else ("/" if "/" in sample else "-")
    year = "YYYY" if len(sample.split(sep)[-1]) == 4 else "YY"
    style = sep.join(["DD", "MM", year] if order == "dmy" else ["MM", "DD", year])
    if parts.iso.any():
        style += " and YYYY-MM-DD"
    return style


def _to_utc(local_seconds: np.ndarray, mask: np.ndarray, tz: ZoneInfo) -> np.ndarray:
    """Wall-clock seconds in ``tz`` to UTC nanoseconds; DST gaps shift forward, repeats read as standard."""
    if len(local_seconds) == 0:
        return np.zeros(0, np.int64)
    seconds = np.where(mask, local_seconds, 0).astype(np.int64)
    if tz.key == "UTC":  # wall clock is UTC already: no calendar work at all
        return seconds * 1_000_000_000
    naive = pd.DatetimeIndex(seconds.astype("datetime64[s]"))
    aware = naive.tz_localize(tz, ambiguous=np.zeros(len(naive), bool), nonexistent="shift_forward")
    return aware.tz_convert("UTC").asi8 * (1_000_000_000 // _unit_ns(aware))


def _xml_safe(cells: pa.Array) -> pa.Array:
    if not V.may_hold_control(cells) or not V.any_cell_matches(cells, XML_FORBIDDEN_RE2):
        return cells
    return pc.replace_substring_regex(cells, XML_FORBIDDEN_RE2, "")


def _repeated(text: str, n: int) -> pd.Series:
    """One text for every row, as a string column (pandas' own broadcast of a scalar copies it n times)."""
    return pd.Series(pa.array([text], pa.string()).take(pa.array(np.zeros(n, np.int32))).to_pandas(), dtype="str")


def _utc_index(nanoseconds: np.ndarray) -> pd.DatetimeIndex:
    """int64 nanoseconds (int64 min = missing) as UTC timestamps, without parsing."""
    return pd.DatetimeIndex(nanoseconds.astype(np.int64).view("M8[ns]")).tz_localize("UTC")


def _unit_ns(index: pd.DatetimeIndex) -> int:
    return {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[index.unit]


def _partial(duration: V.Parsed | None, problems: _Problems, n: int) -> dict:
    """What can be said without dates: used to still show totals when the date order is asked."""
    if duration is None:
        return {"rows": n, "total_seconds": None}
    ok = ~duration.bad & ~duration.empty & (duration.values >= 0)
    return {"rows": n, "total_seconds": int(duration.values[ok].sum()), "entries": int(ok.sum())}
