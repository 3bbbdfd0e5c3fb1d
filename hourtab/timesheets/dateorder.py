"""Whether a file's dates are day-first or month-first, decided once per file from its distinct dates.

``03/04/2025`` reads two ways. The evidence, strongest first: the order the person chose, a date
that only one order can read (``13/04``), dots (day-first by convention), and entries that cross
midnight, where only one reading makes end − start agree with the duration. When none of these
decides, the caller asks the person (``AmbiguousDateOrder``) with a few dates read both ways.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hourtab.timesheets import cell_parsers as V
from hourtab.timesheets.cells import Cells
from hourtab.timesheets.errors import DateReading, TimesheetError

DATE_ORDERS = ("dmy", "mdy")
#: Duration and start/end may differ by this much (trackers round to the second differently).
TOLERANCE_S = 60


def decide_order(parts: V.DateParts, requested: str | None) -> tuple[str | None, str]:
    """The order the dates alone (or the person) decide, with why when it is worth saying; ``None``: undecided."""
    if requested:
        if requested not in DATE_ORDERS:
            raise TimesheetError(f"Unknown date order {requested!r}; choose dmy or mdy.")
        return requested, "date order chosen by you"
    dmy, mdy, matters = V.order_evidence(parts)
    local = parts.ok & ~parts.iso
    if dmy and not mdy:
        return "dmy", ""
    if mdy and not dmy:
        return "mdy", ""
    if dmy and mdy:
        first = int((local & (parts.first > 12)).sum())
        second = int((local & (parts.second > 12)).sum())
        return ("dmy" if first >= second else "mdy"), "dates mix day-first and month-first; the rest are errors"
    if not local.any() or not matters:
        return "dmy", ""
    if parts.dots[local].all():
        return "dmy", "dot-separated dates are day-first"
    return None, ""


def order_from_midnight(parts: V.DateParts, distinct: list[str], start_dates: Cells, end_dates: Cells,
                        start_times: V.Parsed, end_times: V.Parsed, duration: V.Parsed) -> tuple[str | None, str]:
    """When start and end dates differ, only one reading makes end − start match the duration."""
    start_arr, end_arr = start_dates.full(), end_dates.full()
    differ = pc.not_equal(start_arr, end_arr).to_numpy(zero_copy_only=False)
    if not differ.any():
        return None, ""
    lookup = {v: i for i, v in enumerate(distinct)}
    s_idx = np.array([lookup.get(v, -1) for v in pc.filter(start_arr, pa.array(differ)).to_pylist()])
    e_idx = np.array([lookup.get(v, -1) for v in pc.filter(end_arr, pa.array(differ)).to_pylist()])
    clock = end_times.values[differ] - start_times.values[differ]
    fits = {}
    for order in DATE_ORDERS:
        days, bad = V.dates_to_days(parts, order)
        if (s_idx < 0).any() or (e_idx < 0).any() or bad[s_idx].any() or bad[e_idx].any():
            fits[order] = False
            continue
        span = (days[e_idx] - days[s_idx]) * 86400 + clock
        fits[order] = bool((np.abs(span - duration.values[differ]) <= TOLERANCE_S).all())
    if fits["dmy"] != fits["mdy"]:
        return ("dmy" if fits["dmy"] else "mdy"), "day/month order taken from entries that cross midnight"
    return None, ""


def date_readings(parts: V.DateParts) -> list[DateReading]:
    """Up to five dates that read differently day-first and month-first, read both ways."""
    idx = np.flatnonzero(parts.ok & ~parts.iso & (parts.first != parts.second))
    dmy_days, dmy_bad = V.dates_to_days(parts, "dmy")
    mdy_days, mdy_bad = V.dates_to_days(parts, "mdy")

    def show(i: int, days: np.ndarray, bad: np.ndarray) -> str | None:
        return None if bad[i] else (V.EPOCH + dt.timedelta(days=int(days[i]))).strftime("%-d %B %Y")

    return [DateReading(parts.raw[i], show(i, dmy_days, dmy_bad), show(i, mdy_days, mdy_bad)) for i in idx[:5]]


def date_style(parts: V.DateParts, order: str) -> str:
    """How the file writes its dates, as the import report shows it (``DD.MM.YYYY and YYYY-MM-DD``)."""
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
