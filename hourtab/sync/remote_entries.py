"""What a tracker's API says about one entry, and the normalised frame the importer's code reads.

A client turns the vendor's JSON into :class:`RemoteEntry` values and nothing else. :func:`to_frame`
then writes them as the string columns of an export and passes them through the CSV importer's own
:func:`~hourtab.timesheets.normalise.normalise`, so synced entries get exactly the checks, text
clean-up and duration arithmetic an imported file gets (Harvest's decimal hours are rounded from their
digits, as its CSV's are). Times go through in UTC, where the API already states them, so no wall-clock
reading (and no daylight-saving ambiguity) is involved; each entry's local date is then the date of its
start in the zone of the retainer its rules match (routing's ``row_zones``, the rule a CSV's rows are
read by), else in the connection's zone; or the tracker's own date for date-only entries (Harvest).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from hourtab.imports.classify import content_hashes
from hourtab.retainers.routing import Route, row_zones
from hourtab.timesheets.normalise import ENTRY_COLUMNS, normalise
from hourtab.timesheets.spec import FormatSpec
from hourtab.timesheets.table import Body

#: The columns an entry is written as; each API "export" is read by a FormatSpec over these names.
COLUMNS = ("start", "end", "date", "duration", "client", "project", "task", "description", "tags",
           "billable", "user")


@dataclass(frozen=True)
class RemoteEntry:
    id: str
    user: str
    #: Aware start and end (timed entries), or a date alone (Harvest's entries have no times in its CSV).
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    date: dt.date | None = None
    #: Seconds as the tracker totals them; or ``hours`` as the tracker writes decimal hours.
    duration_s: int | None = None
    hours: str | None = None
    description: str = ""
    client: str = ""
    project: str = ""
    task: str = ""
    tags: tuple[str, ...] = ()
    billable: bool | None = None
    #: A running timer: read, never counted until it stops.
    running: bool = False
    #: Other names the tracker knows this user by (Kimai's alias and username), for adopting CSV rows.
    other_users: tuple[str, ...] = ()
    #: The start as the tracker's own exports write it (wall clock in the user's zone), for adopting
    #: CSV rows even when the CSV was read in another zone.
    wall_start: dt.datetime | None = None


@dataclass(frozen=True)
class Unreadable:
    """An entry the tracker listed that could not be read: skipped, and listed on the connection's page."""

    id: str
    reason: str


@dataclass
class Fetched:
    """One sync's reading of the tracker."""

    entries: list[RemoteEntry]
    #: Ids the tracker reports deleted (Toggl's ``server_deleted_at``).
    deleted: set[str] = field(default_factory=set)
    #: Local days within which every live entry was read: a known entry inside that is not among them
    #: was deleted upstream (the only way to see deletions where the API has no deletion feed).
    window: tuple[dt.date, dt.date] | None = None
    warnings: list[str] = field(default_factory=list)
    requests: int = 0
    #: Names to keep for the next sync (see ``FetchPlan.names``); ``None`` keeps what was kept.
    names: dict | None = None
    #: Entries listed that could not be read (skipped; a known one is kept as it was).
    unreadable: list[Unreadable] = field(default_factory=list)


def api_spec(tracker: str, label: str, duration_unit: str) -> FormatSpec:
    """The format of a tracker's API entries, as the normaliser reads formats."""
    return FormatSpec(name=f"{tracker}-api", label=f"{label} API", aliases={c: (c,) for c in COLUMNS},
                      required=(), duration_units={"duration": duration_unit})


def _utc_text(when: dt.datetime | None) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S") if when is not None else ""


def _duration_text(entry: RemoteEntry) -> str:
    if entry.hours is not None:
        return entry.hours
    return str(int(entry.duration_s)) if entry.duration_s is not None else ""


def _cells(entries: list[RemoteEntry]) -> pa.Table:
    """The entries as an export's string columns: start and end, or (date-only trackers) a date."""
    yes_no = {True: "yes", False: "no", None: ""}
    columns = {
        "start": [_utc_text(e.start) for e in entries],
        "end": [_utc_text(e.end) for e in entries],
        "date": [e.date.isoformat() if e.date else "" for e in entries],
        "duration": [_duration_text(e) for e in entries],
        "client": [e.client or "" for e in entries],
        "project": [e.project or "" for e in entries],
        "task": [e.task or "" for e in entries],
        "description": [e.description or "" for e in entries],
        "tags": [", ".join(t for t in e.tags if t) for e in entries],
        "billable": [yes_no[e.billable] for e in entries],
        "user": [e.user or "" for e in entries],
    }
    dated = entries and all(e.start is None for e in entries)
    names = [c for c in COLUMNS if c not in (("start", "end") if dated else ("date",))]
    return pa.table({c: pa.array(columns[c], pa.string()) for c in names})


def scope_key(tracker: str, api_url: str, workspace: str) -> str:
    """What makes a tracker's entry ids unique: the tracker, its host (Kimai is self-hosted), the workspace."""
    return f"{tracker}\x1f{api_url}\x1f{workspace}"


def fingerprints(scope: str, ids: pd.Series) -> pd.Series:
    """The ``time_entries.fingerprint`` of synced entries: the tracker's id, never what the entry says."""
    return ids.map(lambda i: hashlib.sha256(f"sync\x1f{scope}\x1f{i}".encode()).hexdigest()).astype("str")


def _local_dates(frame: pd.DataFrame, zones: pd.Series) -> pd.Series:
    """Each timed entry's start as a date in its row's zone (``NaT`` where it has no time)."""
    local = pd.Series(pd.NaT, index=frame.index, dtype="datetime64[s]")
    for zone in zones.unique():
        rows = zones == zone
        local[rows] = (frame.loc[rows, "start_at"].dt.tz_convert(zone).dt.tz_localize(None).dt.normalize()
                       .astype("datetime64[s]"))
    return local


def to_frame(entries: list[RemoteEntry], spec: FormatSpec, zone: str, scope: str, routes: Sequence[Route] = ()
             ) -> tuple[pd.DataFrame, list[str]]:
    """Stopped entries as the importer's normalised frame, plus ``external_id``, ``fingerprint`` and
    ``content_hash``; and warnings (entries the normaliser refused, oddities it noticed).

    ``routes``: the account's active retainers; an entry one of them takes is dated in its zone, the
    others in ``zone`` (the connection's)."""
    stopped = [e for e in entries if not e.running]
    n = len(stopped)
    table = _cells(stopped)
    body = Body(table=table, lines=np.arange(1, n + 1, dtype=np.int64))
    result = normalise(body, table.column_names, spec, timezone="UTC")
    frame = result.frame
    ids = pd.Series([stopped[i - 1].id for i in frame["line"]], index=frame.index, dtype="str")
    timed = frame["start_at"].notna()
    zones = row_zones(frame, routes, zone) if routes and len(frame) else pd.Series(zone, index=frame.index, dtype="str")
    frame = frame.assign(local_date=_local_dates(frame, zones).where(timed, frame["local_date"]), timezone=zones)
    frame = frame.assign(external_id=ids, fingerprint=fingerprints(scope, ids))
    frame = frame.assign(content_hash=content_hashes(frame))
    label = spec.label.removesuffix(" API")
    # Every issue of a parsed body names its line: the n-th stopped entry is line n.
    warnings = [f"{label} entry {stopped[(i.line or 1) - 1].id} was left out: {i.message} ({i.column})"
                for i in result.issues]
    warnings += [re.sub(r"^line (\d+):", lambda m: f"{label} entry {stopped[int(m.group(1)) - 1].id}:", w)
                 for w in result.warnings]
    return frame[[*ENTRY_COLUMNS, "external_id", "fingerprint", "content_hash"]], warnings
