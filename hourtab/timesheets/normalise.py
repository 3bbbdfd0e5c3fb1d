"""From a tracker's string columns to normalised entries: exact seconds, dates, UTC times.

Everything here is column-at-a-time. Problems are gathered as masks and only the bad rows are
turned into :class:`RowIssue` objects, so a clean 100,000-row file never builds 100,000 messages.
The duration column is authoritative (it is what the tracker totals); start and end are kept for
the record and checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hourtab.timesheets import cell_parsers as V
from hourtab.timesheets.cells import Cells
from hourtab.timesheets.dateorder import (
    TOLERANCE_S,
    date_readings,
    date_style,
    decide_order,
    order_from_midnight,
)
from hourtab.timesheets.entryframe import billable_column, entry_frame, entry_texts
from hourtab.timesheets.errors import AmbiguousDateOrder, RowIssue, TimesheetError
from hourtab.timesheets.reading import EntrySpan, FieldColumns, LazyCells, RowProblems, RowWarnings, Shown
from hourtab.timesheets.spec import FormatSpec
from hourtab.timesheets.table import Body

LONG_ENTRY_S = 24 * 3600

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


def hms(seconds: int) -> str:
    sign = "-" if seconds < 0 else ""
    seconds = abs(int(seconds))
    return f"{sign}{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def normalise(body: Body, columns: list[str], spec: FormatSpec, *, date_order: str | None = None,
              timezone: str = "UTC") -> Normalised:
    """The file's rows as entries (exact seconds, local dates, UTC times) and every problem found on the way.

    The steps, in order: which columns hold what; times of day; the duration; the day/month order and
    each row's date; start and end in UTC; each entry's seconds; the text columns.
    """
    tz = check_timezone(timezone)
    n = body.table.num_rows
    cols = FieldColumns(body, spec.resolve(columns), {name: i for i, name in enumerate(columns)})
    problems, warnings = RowProblems(n, body.lines), RowWarnings(body.lines)
    _repeated_header(problems, cols)
    clocks = _clocks(cols, problems)
    duration = _duration(cols, spec, problems)
    days = _days(_date_sources(cols), clocks, duration, date_order, problems, n)
    span = _span(days, clocks, n, tz, problems)
    seconds, duration_style = _seconds(duration, span, clocks, problems, warnings)
    ok = ~problems.bad
    frame = entry_frame(body.lines, span, seconds, timezone, spec.name, entry_texts(cols, n),
                        billable_column(cols, n))
    if not ok.all():
        frame = frame.loc[ok].reset_index(drop=True)
    return Normalised(frame=frame, issues=problems.issues(), warnings=warnings.items, date_order=days.order,
                      date_style=days.style, time_style=_time_style(clocks), duration_style=duration_style,
                      bad_rows=int(problems.bad.sum()), details=[days.why] if days.why else [])


@dataclass
class _Clock:
    """A time-of-day field: the column it comes from and each row's seconds since midnight."""

    column: str
    shown: Shown
    parsed: V.Parsed
    twelve_hour: bool
    with_seconds: bool


def _clock_of(column: str, cells: Cells) -> _Clock:
    parsed, twelve_hour, with_seconds = V.times_of_day(cells.values)
    return _Clock(column, cells, cells.parsed(parsed), twelve_hour, with_seconds)


def _clocks(cols: FieldColumns, problems: RowProblems) -> dict[str, _Clock]:
    """Start and end times of day; a combined start or end column (date and time) gives the time and wins."""
    clocks: dict[str, _Clock] = {}
    for side in ("start", "end"):
        fld = f"{side}_time"
        if (combined := _split_datetime(cols.cells(side))) is not None:
            clocks[fld] = _clock_of(cols.found[side], combined[1])
        elif fld in cols.found and pa.types.is_time((column := cols.raw(fld)).type):
            # Read as times by the CSV reader already (``read_body``): the text is made only to show a problem.
            parsed, with_seconds = _read_times(column.combine_chunks())
            shown = LazyCells(partial(cols.body.cells, cols.index[cols.found[fld]]))
            clocks[fld] = _Clock(cols.found[fld], shown, parsed, False, with_seconds)
        elif (cells := cols.cells(fld)) is not None:
            clocks[fld] = _clock_of(cols.found[fld], cells)
    for clock in clocks.values():
        problems.add(clock.parsed.bad, clock.column, "not a time of day", "HH:MM, HH:MM:SS or h:MM AM/PM",
                     clock.shown)
    return clocks


def _time_style(clocks: dict[str, _Clock]) -> str:
    if not clocks:
        return "no times"
    twelve_hour = any(c.twelve_hour for c in clocks.values())
    with_seconds = any(c.with_seconds for c in clocks.values())
    return ("12 h times" if twelve_hour else "24 h times") + ("" if with_seconds else " without seconds")


@dataclass
class _Duration:
    """The duration column as first read, and how it is written."""

    column: str
    cells: Cells
    unit: str
    parsed: V.Parsed
    style: str


def _duration(cols: FieldColumns, spec: FormatSpec, problems: RowProblems) -> _Duration | None:
    cells = cols.cells("duration")
    if cells is None:
        return None
    column = cols.found["duration"]
    unit = spec.duration_unit(column)
    parsed, style = _parse_duration(cells.values, unit)
    duration = _Duration(column, cells, unit, cells.parsed(parsed), style)
    problems.add(duration.parsed.bad, column, "not a duration",
                 "H:MM:SS, H:MM or decimal hours" if unit != "seconds" else "whole seconds", cells)
    return duration


def _date_sources(cols: FieldColumns) -> dict[str, tuple[str, Cells]]:
    """(column, cells) per date field; a combined start or end column gives the date and wins."""
    dates: dict[str, tuple[str, Cells]] = {}
    if (cells := cols.cells("date")) is not None:
        dates["date"] = (cols.found["date"], cells)
    for side in ("start", "end"):
        fld = f"{side}_date"
        if (combined := _split_datetime(cols.cells(side))) is not None:
            dates[fld] = (cols.found[side], combined[0])
        elif (cells := cols.cells(fld)) is not None:
            dates[fld] = (cols.found[fld], cells)
    return dates


#: Per date field: each row's day number (days since ``cell_parsers.EPOCH``), whether it is bad, whether empty.
DayNumbers = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class _Days:
    """The day/month order decided for the file, and each date field's day numbers."""

    order: str
    style: str
    why: str
    days: dict[str, DayNumbers]
    #: The entry's own date: its start date where the file has one.
    field: str


def _days(dates: dict[str, tuple[str, Cells]], clocks: dict[str, _Clock], duration: _Duration | None,
          requested: str | None, problems: RowProblems, n: int) -> _Days:
    # One dictionary encoding per date column gives both its distinct values and, below, each row's.
    distinct: list[str] = sorted({v for _, arr in dates.values() for v in arr.values.to_pylist() if v})
    parts = V.date_parts(distinct)
    order, why = decide_order(parts, requested)
    if (order is None and "start_date" in dates and "end_date" in dates and duration is not None
            and "start_time" in clocks and "end_time" in clocks):
        order, why = order_from_midnight(parts, distinct, dates["start_date"][1], dates["end_date"][1],
                                         clocks["start_time"].parsed, clocks["end_time"].parsed, duration.parsed)
    if order is None:
        raise AmbiguousDateOrder([column for column, _ in dates.values()], date_readings(parts),
                                 report=_partial(duration.parsed if duration else None, problems, n))
    style = date_style(parts, order)
    days_by_value, bad_by_value = V.dates_to_days(parts, order)
    known = pa.array(distinct, pa.string())

    def day_numbers(arr: Cells) -> DayNumbers:
        """(day number, bad, empty) per row, worked out per distinct value and then spread."""
        empty = V.is_empty(arr.values)
        which = pc.index_in(arr.values, value_set=known).fill_null(-1).to_numpy(zero_copy_only=False)
        ok = which >= 0
        days = np.where(ok, days_by_value[np.maximum(which, 0)], 0)
        bad = ~empty & (~ok | bad_by_value[np.maximum(which, 0)])
        return arr.rows(days), arr.rows(bad), arr.rows(empty)

    out: dict[str, DayNumbers] = {}
    expected = f"a real date written {style}"
    for fld, (column, arr) in dates.items():
        out[fld] = day_numbers(arr)
        problems.add(out[fld][1], column, "not a valid date", expected, arr)
    day_field = "start_date" if "start_date" in out else "date"
    problems.add(out[day_field][2], dates[day_field][0], "the date is missing", expected, dates[day_field][1])
    return _Days(order, style, why, out, day_field)


def _span(days: _Days, clocks: dict[str, _Clock], n: int, tz: ZoneInfo, problems: RowProblems) -> EntrySpan:
    day = days.days[days.field][0]
    start, end = clocks.get("start_time"), clocks.get("end_time")
    timed = np.zeros(n, bool) if start is None else ~start.parsed.empty & ~start.parsed.bad
    has_end = np.zeros(n, bool) if end is None else ~end.parsed.empty & ~end.parsed.bad & timed
    start_local = day * 86400 + (start.parsed.values if start is not None else 0)
    if "end_date" in days.days:
        end_day, _, end_day_empty = days.days["end_date"]
        end_day = np.where(end_day_empty, day, end_day)
        explicit_end_day = ~end_day_empty
    else:
        end_day = day
        explicit_end_day = np.zeros(n, bool)
    end_local = end_day * 86400 + (end.parsed.values if end is not None else 0)
    crossed = has_end & ~explicit_end_day & (end_local < start_local)   # past midnight, no end date given
    end_local = np.where(crossed, end_local + 86400, end_local)
    if end is not None:
        backwards = has_end & explicit_end_day & (end_local < start_local)
        problems.add(backwards, end.column, "the entry ends before it starts", "an end at or after the start",
                     end.shown)
    start_utc, end_utc = _to_utc(start_local, timed, tz), _to_utc(end_local, has_end, tz)
    seconds = np.where(has_end, (end_utc - start_utc) // 1_000_000_000, 0) if n else np.zeros(0, np.int64)
    return EntrySpan(day, timed, has_end, start_utc, end_utc, seconds)


def _seconds(duration: _Duration | None, span: EntrySpan, clocks: dict[str, _Clock], problems: RowProblems,
             warnings: RowWarnings) -> tuple[np.ndarray, str]:
    """Each entry's seconds (the duration column is what the tracker totals) and how they were read."""
    if duration is None:
        seconds, style = _from_start_and_end(span, clocks, problems)
    else:
        seconds, style = _from_duration(duration, span, clocks, problems, warnings)
    warnings.add((seconds > LONG_ENTRY_S) & ~problems.bad,
                 lambda i: f"an entry of {hms(seconds[i])}, longer than a day (a timer left running?)")
    return seconds, style


def _from_start_and_end(span: EntrySpan, clocks: dict[str, _Clock],
                        problems: RowProblems) -> tuple[np.ndarray, str]:
    style = "start and end"
    if "start_time" in clocks and "end_time" in clocks:
        style = f"from {clocks['start_time'].column} to {clocks['end_time'].column}"
    clock = clocks.get("end_time") or clocks.get("start_time")
    problems.add(~span.has_end, clock.column if clock else "", "start or end time is missing",
                 "a start and an end time", None)
    return span.seconds, style


def _from_duration(duration: _Duration, span: EntrySpan, clocks: dict[str, _Clock], problems: RowProblems,
                   warnings: RowWarnings) -> tuple[np.ndarray, str]:
    parsed, style, has_end = duration.parsed, duration.style, span.has_end
    if duration.unit == "kimai" and _looks_like_seconds(duration.cells, span.seconds, has_end):
        parsed = duration.cells.parsed(V.decimal_duration(duration.cells.values, unit_seconds=1))
        agree = int(((np.abs(parsed.values - span.seconds) <= TOLERANCE_S) & has_end).sum())
        style = (f"in whole seconds ({agree} of {int(has_end.sum())} agree with "
                 f"{clocks['start_time'].column} to {clocks['end_time'].column})"
                 if has_end.any() else "in whole seconds")
    use_span = parsed.empty & has_end
    seconds = np.where(use_span, span.seconds, parsed.values)
    problems.add(parsed.empty & ~has_end, duration.column, "the duration is missing",
                 "a duration such as 1:30:00 or 1.5", duration.cells)
    problems.add((seconds < 0) & ~parsed.bad, duration.column, "the duration is negative",
                 "a duration of zero or more", duration.cells)
    disagree = (has_end & ~use_span & ~parsed.bad & (np.abs(seconds - span.seconds) > TOLERANCE_S)
                & ~problems.bad)
    warnings.add(disagree, lambda i: f"duration {hms(seconds[i])} but start to end is {hms(span.seconds[i])}; "
                                     "the duration is used")
    return seconds, style


def _read_times(column: pa.Array) -> tuple[V.Parsed, bool]:
    """A column pyarrow read as ``time32[s]`` (every cell HH:MM:SS or blank), and whether seconds are shown."""
    empty = column.is_null().to_numpy(zero_copy_only=False)
    seconds = pc.cast(column, pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return V.Parsed(seconds, np.zeros(len(column), bool), empty), bool((~empty).any())


def _repeated_header(problems: RowProblems, cols: FieldColumns) -> None:
    """Two exports pasted together leave a second header row in the data."""
    names = list(dict.fromkeys(cols.found.values()))[:3]
    rows = cols.body.table.num_rows
    if not names or rows == 0:
        return
    mask = np.ones(rows, bool)
    for name in names:
        found_cells = cols.cells_of(name)
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


def _unit_ns(index: pd.DatetimeIndex) -> int:
    return {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[index.unit]


def _partial(duration: V.Parsed | None, problems: RowProblems, n: int) -> dict:
    """What can be said without dates: used to still show totals when the date order is asked."""
    if duration is None:
        return {"rows": n, "total_seconds": None}
    ok = ~duration.bad & ~duration.empty & (duration.values >= 0)
    return {"rows": n, "total_seconds": int(duration.values[ok].sum()), "entries": int(ok.sum())}
