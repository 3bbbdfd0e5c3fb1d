"""The stable fingerprint that makes re-imports idempotent and overlapping exports mergeable.

Trackers' CSVs carry no entry id, so identity is what does not change when an entry is edited:
the user and the wall-clock start as the export shows it (timed entries), or the user, day,
client, project and task (Harvest-style entries without times). Duration and description are
left out on purpose, so an edit upstream shows up as *changed*, not as a new entry. Identical keys
in one file are told apart by their order of appearance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hourtab.timesheets.canonical import (
    SEP,
    arrow_text,
    integers,
    iso_dates,
    join_fields,
    sha256_hex,
    wall_clock_seconds,
)

__all__ = ["SEP", "add_fingerprints", "identity_keys"]


def identity_keys(frame: pd.DataFrame) -> pd.Series:
    """The text each fingerprint hashes, one per entry (see the module docstring)."""
    return pd.Series(_keys(frame), index=frame.index, dtype="str")


def _keys(frame: pd.DataFrame) -> pa.Array:
    user = pc.utf8_lower(pc.utf8_trim_whitespace(arrow_text(frame["user_name"])))
    timed = frame["start_at"].notna().to_numpy()
    # Wall-clock start in the export's own zone: a later change of the time-zone setting must not
    # turn every old entry into a new one.
    zone = frame["timezone"].iloc[0] if len(frame) else "UTC"
    timed_key = join_fields(["t", user, wall_clock_seconds(frame["start_at"], zone)])
    dated_key = join_fields(["d", user, iso_dates(frame["local_date"]), arrow_text(frame["client"]),
                      arrow_text(frame["project"]), arrow_text(frame["task"])])
    key = pc.if_else(pa.array(timed), timed_key, dated_key)
    # Identical keys in one file are told apart by their order of appearance.
    codes = pc.dictionary_encode(key).indices.to_numpy(zero_copy_only=False)
    ordinal = pd.Series(codes).groupby(codes, sort=False).cumcount().to_numpy(np.int64)
    return join_fields([key, integers(ordinal)])


def add_fingerprints(frame: pd.DataFrame) -> pd.DataFrame:
    if not len(frame):
        return frame.assign(fingerprint=pd.Series([], dtype="str"))
    return frame.assign(fingerprint=sha256_hex(_keys(frame), frame.index))
