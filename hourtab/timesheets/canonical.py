"""Canonical text forms of entry columns, built a whole column at a time.

Fingerprints, content digests and SQLite's stored datetimes are all text derived from the
entries' columns. Producing that text with pandas' ``strftime`` or string ``+`` costs seconds
per 100,000 entries (both loop per value in Python); pyarrow's casts to text and its
element-wise join do the same in C. The text must stay byte-for-byte what the per-row code
produced, because fingerprints and digests are stored: every function here documents the form it
reproduces, and falls back to pandas where the fast form could differ (years outside 1000–9999,
fractions a coarser unit would drop).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

SEP = "\x1f"


def arrow_text(values: pd.Series | pa.Array) -> pa.Array:
    """A string column as one pyarrow array (pandas' ``str`` columns are pyarrow already)."""
    arr = values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values, pa.string(),
                                                                                 from_pandas=True)
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _four_digit_years(values: np.ndarray) -> bool:
    """numpy writes years as four digits only between 1000 and 9999 (so does ``strftime('%Y')``)."""
    valid = values[~np.isnat(values)]
    if not len(valid):
        return True
    years = valid.astype("datetime64[Y]").astype(np.int64) + 1970
    return bool(years.min() >= 1000 and years.max() <= 9999)


def _arrow_times(values: np.ndarray, unit: str) -> pa.Array:
    """numpy datetimes as a pyarrow timestamp (or date) array; NaT becomes null."""
    if unit == "D":
        return pa.array(values.astype("datetime64[D]"), from_pandas=True).cast(pa.date32())
    return pa.array(values.astype(f"datetime64[{unit}]"), from_pandas=True)


def iso_dates(values: pd.Series) -> pa.Array:
    """``values.dt.strftime("%Y-%m-%d")`` for naive datetimes (missing as null)."""
    raw = values.to_numpy(dtype="datetime64[s]")
    if not _four_digit_years(raw):
        return arrow_text(values.dt.strftime("%Y-%m-%d"))
    return pc.cast(_arrow_times(raw, "D"), pa.string())


def wall_clock_seconds(values: pd.Series, zone: str) -> pa.Array:
    """``values.dt.tz_convert(zone).dt.strftime("%Y-%m-%dT%H:%M:%S")`` of aware times (missing as null)."""
    local = values.dt.tz_convert(zone).dt.tz_localize(None)
    raw = local.to_numpy(dtype="datetime64[ns]")
    if not _four_digit_years(raw) or (raw[~np.isnat(raw)].astype(np.int64) % 1_000_000_000).any():
        return arrow_text(values.dt.tz_convert(zone).dt.strftime("%Y-%m-%dT%H:%M:%S"))
    text = pc.cast(_arrow_times(raw, "s"), pa.string())  # "YYYY-MM-DD HH:MM:SS"
    return pc.replace_substring(text, " ", "T", max_replacements=1)


def sqlite_datetimes(values: pd.Series) -> pa.Array:
    """Aware times as SQLAlchemy stores them in SQLite: naive UTC ``YYYY-MM-DD HH:MM:SS.ffffff``.

    Same text as ``values.dt.tz_convert("UTC").dt.strftime("%Y-%m-%d %H:%M:%S.%f")``; null where missing.
    """
    utc = values.dt.tz_convert("UTC").dt.tz_localize(None)
    raw = utc.to_numpy(dtype="datetime64[ns]")
    if not _four_digit_years(raw) or (raw[~np.isnat(raw)].astype(np.int64) % 1000).any():
        text = values.dt.tz_convert("UTC").dt.strftime("%Y-%m-%d %H:%M:%S.%f")
        return arrow_text(text.where(values.notna(), None))
    return pc.cast(_arrow_times(raw, "us"), pa.string())  # arrow writes all six digits of a [us] time


def integers(values: np.ndarray) -> pa.Array:
    """Integers in decimal, as ``str(int)`` writes them."""
    return pc.cast(pa.array(np.asarray(values, np.int64)), pa.string())


def join_fields(parts: list[pa.Array | str]) -> pa.Array:
    """Fields joined with the unit separator, row by row (a missing field joins as "")."""
    arrays = [p if isinstance(p, str) else p.fill_null("") for p in parts]
    return pc.binary_join_element_wise(*arrays, SEP)


def sha256_hex(text: pa.Array, index: pd.Index) -> pd.Series:
    """Hex sha256 of each row's UTF-8 text; hashlib per row is the only per-row Python left."""
    sha = hashlib.sha256
    digests = [sha(b).hexdigest() for b in text.cast(pa.binary()).to_pylist()]
    return pd.Series(digests, index=index, dtype="str")
