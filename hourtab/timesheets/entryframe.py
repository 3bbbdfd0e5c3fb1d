"""The normalised entries as a frame: text columns made safe, billable flags, UTC times, one row per entry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hourtab.core.values import XML_FORBIDDEN_RE2
from hourtab.timesheets import cell_parsers as V
from hourtab.timesheets.reading import EntrySpan, FieldColumns


def entry_texts(cols: FieldColumns, n: int) -> dict[str, pa.Array]:
    """Client, project, task, description, tags and the person, trimmed and safe for XML."""
    empty = pa.nulls(n, pa.string()).fill_null("")

    def clean(fld: str) -> pa.Array:
        """The field's trimmed cells without the characters XML forbids (an e-mail or PDF would break)."""
        if fld not in cols.found:
            return empty
        name = cols.found[fld]
        if cols.body.has_cells(cols.index[name]) or fld == "tags":  # encoded already, or few distinct values
            cleaned = cols.cells_of(name).map(_xml_safe)
            return (cleaned.map(lambda v: pc.replace_substring_regex(v, r"\s*,\s*", ", ")) if fld == "tags"
                    else cleaned).full()
        return _xml_safe(V.trim(cols.raw(fld).combine_chunks()))

    def full(fld: str) -> pa.Array:
        cells = cols.cells(fld)
        return cells.full() if cells is not None else empty

    text = {f: clean(f) for f in ("client", "project", "task", "description", "tags")}
    if "user" in cols.found:
        text["user_name"] = clean("user")
    elif "first_name" in cols.found or "last_name" in cols.found:
        text["user_name"] = pc.replace_substring_regex(pc.utf8_trim_whitespace(pc.binary_join_element_wise(
            full("first_name"), full("last_name"), " ")), XML_FORBIDDEN_RE2, "")
    else:
        text["user_name"] = empty
    return text


def billable_column(cols: FieldColumns, n: int) -> pd.arrays.BooleanArray:
    bill = cols.cells("billable")
    if bill is None:
        return pd.array([pd.NA] * n, dtype="boolean")
    yes, known = V.truthy(bill.values)
    return pd.arrays.BooleanArray(bill.rows(yes), ~bill.rows(known))


def entry_frame(lines: np.ndarray, span: EntrySpan, seconds: np.ndarray, timezone: str, source_format: str,
           texts: dict[str, pa.Array], billable: pd.arrays.BooleanArray) -> pd.DataFrame:
    """Every row as an entry in ``ENTRY_COLUMNS`` order (rows with problems are dropped by the caller)."""
    n = len(lines)
    utc_start = _utc_index(np.where(span.timed, span.start_utc, np.iinfo(np.int64).min))
    utc_end = _utc_index(np.where(span.has_end, span.end_utc, np.iinfo(np.int64).min))
    no_end_but_timed = span.timed & ~span.has_end
    utc_end = utc_end.where(~no_end_but_timed, utc_start + pd.to_timedelta(seconds, unit="s"))

    def strings(v: pa.Array) -> pd.Series:
        return pd.Series(v.to_pandas(), dtype="str") if n else pd.Series([], dtype="str")

    return pd.DataFrame({
        "line": lines.astype(np.int64),
        "start_at": utc_start,
        "end_at": utc_end,
        "local_date": (span.day * 86400).astype("datetime64[s]"),
        "timezone": _repeated(timezone, n),
        "duration_s": seconds.astype(np.int64),
        **{k: strings(texts[k]) for k in ("client", "project", "task", "description", "tags")},
        "billable": billable,
        "user_name": strings(texts["user_name"]),
        "source_format": _repeated(source_format, n),
    })


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
