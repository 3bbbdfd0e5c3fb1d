"""The stable fingerprint that makes re-imports idempotent and overlapping exports mergeable.

Trackers' CSVs carry no entry id, so identity is what does not change when an entry is edited:
the user and the wall-clock start as the export shows it (timed entries), or the user, day,
client, project and task (Harvest-style entries without times). Duration and description are
left out on purpose, so an edit upstream shows up as *changed*, not as a new entry. Identical keys
in one file are told apart by their order of appearance.
"""

from __future__ import annotations

import hashlib

import pandas as pd

SEP = "\x1f"


def identity_keys(frame: pd.DataFrame) -> pd.Series:
    user = frame["user_name"].str.strip().str.lower()
    timed = frame["start_at"].notna()
    # Wall-clock start in the export's own zone: a later change of the time-zone setting must not
    # turn every old entry into a new one.
    zone = frame["timezone"].iloc[0] if len(frame) else "UTC"
    start_text = frame["start_at"].dt.tz_convert(zone).dt.strftime("%Y-%m-%dT%H:%M:%S")
    day = frame["local_date"].dt.strftime("%Y-%m-%d")
    timed_key = "t" + SEP + user + SEP + start_text.fillna("")
    dated_key = ("d" + SEP + user + SEP + day + SEP + frame["client"] + SEP + frame["project"] + SEP
                 + frame["task"])
    key = timed_key.where(timed, dated_key)
    ordinal = key.groupby(key, sort=False).cumcount().astype("str")
    return key + SEP + ordinal


def add_fingerprints(frame: pd.DataFrame) -> pd.DataFrame:
    if not len(frame):
        return frame.assign(fingerprint=pd.Series([], dtype="str"))
    keys = identity_keys(frame)
    digests = [hashlib.sha256(k.encode("utf-8")).hexdigest() for k in keys.tolist()]
    return frame.assign(fingerprint=pd.Series(digests, index=frame.index, dtype="str"))
