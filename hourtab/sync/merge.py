"""A sync's reading applied to the account's time entries, in the caller's transaction.

Identity is the tracker's entry id (``sync_entries``). Each entry the tracker lists is, in order:

* **known**: mapped already; *changed* when the tracker's values differ from when we last saw them
  (or the entry is not active), else *unchanged*;
* **reclaimed**: stored by an earlier connection to the same tracker and workspace (same id);
* **adopted**: imported from this tracker's CSV exports (same user, start, duration, description and
  project, within the export's rounding): mapped to that entry, which takes the API's values (the
  API states instants; an export read in another zone had the wrong times, and a closed period that
  changes is marked revised), so switching from CSV to sync counts nothing twice;
* **new**: inserted, hanging on the connection's upload row.

A CSV entry of this tracker that duplicates a known entry (imported after connecting, before the
importer recognised such rows) is removed, with its history: the synced entry counts.
Entries the tracker listed but that could not be read are skipped and listed; a known one among them
is kept as it was (it is not taken for deleted).

A known entry the tracker reports deleted, or that is missing from a window the sync read in full, is
removed (status ``removed``, with its history). Running timers are left alone until they stop. Then
the retainers' assignment service routes the entries the sync wrote, as after a CSV import, inside the
retainers' watch on closed periods (``revisions``), so a closed period the sync changes is marked revised.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, cast
from zoneinfo import ZoneInfo

import pandas as pd
from sqlalchemy import exists, func, insert, select, update
from sqlalchemy.orm import Session

from hourtab.imports.classify import COMPARED
from hourtab.retainers.assign import entries_changed
from hourtab.retainers.routing import active_routes
from hourtab.sync import revisions
from hourtab.sync.clients import Tracker
from hourtab.sync.models import Connection, SyncedEntry
from hourtab.sync.remote_entries import Fetched, RemoteEntry, api_spec, scope_key, to_frame
from hourtab.timesheets.models import TimeEntry, Upload, time_entry_changes
from hourtab.timesheets.normalise import TOLERANCE_S

#: Statuses a stored entry counts with (``removed`` ones do not count).
COUNTING = ("active", "missing_upstream")
#: An empty window while this many known entries lie in it is taken for a faulty answer, not deletions.
EMPTY_WINDOW_GUARD = 3


@dataclass
class SyncResult:
    new: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    adopted: int = 0
    running: int = 0
    skipped: int = 0
    duplicates_removed: int = 0
    warnings: list[str] = field(default_factory=list)
    revised_periods: list[dict[str, Any]] = field(default_factory=list)
    #: [{"id", "reason"}] of entries listed that could not be read (the first hundred).
    unreadable: list[dict[str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"new": self.new, "changed": self.changed, "removed": self.removed, "unchanged": self.unchanged,
                "adopted": self.adopted, "running": self.running, "skipped": self.skipped,
                "duplicates_removed": self.duplicates_removed}

    def as_json(self) -> dict[str, Any]:
        return {**self.counts(), "warnings": self.warnings, "revised_periods": self.revised_periods,
                "unreadable": self.unreadable}


def _norm(value: object) -> str:
    return " ".join(str(value or "").split()).casefold()


def _py_time(value: Any) -> dt.datetime | None:
    return None if pd.isna(value) else pd.Timestamp(value).to_pydatetime()


def _values(row: dict[str, Any]) -> dict[str, Any]:
    """A frame row as the ``time_entries`` columns the importer compares (plain Python values)."""
    billable = row["billable"]
    return {"duration_s": int(row["duration_s"]), "description": row["description"], "client": row["client"],
            "project": row["project"], "task": row["task"], "tags": row["tags"],
            "billable": None if pd.isna(billable) else bool(billable), "start_at": _py_time(row["start_at"]),
            "end_at": _py_time(row["end_at"]), "local_date": pd.Timestamp(row["local_date"]).date(),
            "user_name": row["user_name"], "timezone": row["timezone"], "content_hash": row["content_hash"]}


def _json(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.date | dt.datetime) else value


@dataclass
class _Known:
    entry_id: int
    remote_hash: str
    status: str
    local_date: dt.date


def _known(session: Session, connection_id: int) -> dict[str, _Known]:
    te, se = TimeEntry, SyncedEntry
    rows = session.execute(select(se.external_id, se.entry_id, se.remote_hash, te.status, te.local_date)
                           .join(te, te.id == se.entry_id).where(se.connection_id == connection_id))
    return {ext: _Known(entry_id, digest, status, day) for ext, entry_id, digest, status, day in rows}


def _reclaimable(session: Session, account_id: int, fingerprints: list[str]) -> dict[str, _Known]:
    """Entries an earlier connection to the same tracker stored (their fingerprint is the tracker id)."""
    found: dict[str, _Known] = {}
    for i in range(0, len(fingerprints), 500):
        rows = session.execute(select(TimeEntry.fingerprint, TimeEntry.id, TimeEntry.content_hash, TimeEntry.status,
                                      TimeEntry.local_date)
                               .where(TimeEntry.account_id == account_id,
                                      TimeEntry.fingerprint.in_(fingerprints[i:i + 500]),
                                      ~exists().where(SyncedEntry.entry_id == TimeEntry.id)))
        found.update({fp: _Known(entry_id, digest, status, day) for fp, entry_id, digest, status, day in rows})
    return found


#: Unreadable entries listed on the connection's page, at most.
UNREADABLE_SHOWN = 100


@dataclass
class _Candidate:
    entry_id: int
    status: str
    start_at: dt.datetime | None
    wall_start: dt.datetime | None
    local_date: dt.date
    duration_s: int
    content_hash: str = ""


def _candidates(session: Session, account_id: int, csv_format: str, first: dt.date, last: dt.date
                ) -> dict[tuple[str, str, str], list[_Candidate]]:
    """This tracker's CSV-imported entries that no tracker id claims yet, by (user, project, description)."""
    te = TimeEntry
    rows = session.execute(select(te.id, te.status, te.start_at, te.timezone, te.local_date, te.duration_s, te.user_name,
                                  te.project, te.description, te.content_hash)
                           .where(te.account_id == account_id, te.source_format == csv_format,
                                  te.status.in_(COUNTING), te.local_date.between(first - dt.timedelta(days=1),
                                                                                 last + dt.timedelta(days=1)),
                                  ~exists().where(SyncedEntry.entry_id == te.id))
                           .order_by(te.local_date, te.start_at, te.id))
    found: dict[tuple[str, str, str], list[_Candidate]] = defaultdict(list)
    for entry_id, status, start, zone, day, seconds, user, project, description, digest in rows:
        # The wall clock the export showed: the stored instant read back in the zone it was read in.
        wall = start.astimezone(ZoneInfo(zone)).replace(tzinfo=None) if start is not None else None
        found[(_norm(user), _norm(project), _norm(description))].append(
            _Candidate(entry_id, status, start, wall, day, seconds, digest))
    return found


def _close(a: dt.datetime | None, b: dt.datetime | None) -> bool:
    return a is not None and b is not None and abs((a - b).total_seconds()) <= TOLERANCE_S


def _adopt(pool: dict[tuple[str, str, str], list[_Candidate]], row: dict[str, Any], remote: RemoteEntry
           ) -> _Candidate | None:
    """The CSV entry this tracker entry is, if any (taken out of the pool: each is adopted once)."""
    start = _py_time(row["start_at"])
    for user in (remote.user, *remote.other_users):
        bucket = pool.get((_norm(user), _norm(row["project"]), _norm(row["description"])), [])
        for i, c in enumerate(bucket):
            if abs(c.duration_s - int(row["duration_s"])) > TOLERANCE_S:
                continue
            if start is None:
                same = c.start_at is None and c.local_date == pd.Timestamp(row["local_date"]).date()
            else:
                same = _close(c.start_at, start) or _close(c.wall_start, remote.wall_start)
            if same:
                return bucket.pop(i)
    return None


class _Writer:
    """Collects the writes of one sync and does them in a few statements."""

    def __init__(self, session: Session, connection: Connection, now: dt.datetime) -> None:
        self.session, self.connection, self.now = session, connection, now
        self.changes: list[dict[str, Any]] = []
        self.mappings: list[dict[str, Any]] = []
        self.hashes: list[dict[str, Any]] = []
        self.inserted: list[int] = []

    def change(self, entry_id: int, row: dict[str, Any], old_status: str) -> None:
        entry = self.session.get_one(TimeEntry, entry_id)
        old = {c: _json(getattr(entry, c)) for c in (*COMPARED, "status")}
        for key, value in _values(row).items():
            setattr(entry, key, value)
        entry.status, entry.updated_at = "active", self.now
        self.record(entry_id, "changed" if old_status == "active" else "reappeared", old)

    def record(self, entry_id: int, kind: str, old: dict[str, Any]) -> None:
        self.changes.append({"account_id": self.connection.account_id, "entry_id": entry_id,
                             "upload_id": self.connection.upload_id, "kind": kind, "old_values": old,
                             "changed_at": self.now})

    def remove(self, entry_id: int, status: str) -> None:
        self.session.execute(update(TimeEntry).where(TimeEntry.id == entry_id)
                             .values(status="removed", updated_at=self.now))
        self.record(entry_id, "removed", {"status": status})

    def insert(self, rows: list[dict[str, Any]], source_format: str) -> None:
        if not rows:
            return
        account_id, upload_id = self.connection.account_id, self.connection.upload_id
        records = [{"account_id": account_id, "upload_id": upload_id, "status": "active", "updated_at": self.now,
                    "fingerprint": r["fingerprint"], "source_format": source_format, "source_line": int(r["line"]),
                    **_values(r)} for r in rows]
        self.session.execute(insert(TimeEntry), records)
        fps = [r["fingerprint"] for r in rows]
        ids: dict[str, int] = {}
        for i in range(0, len(fps), 500):
            ids.update(self.session.execute(select(TimeEntry.fingerprint, TimeEntry.id).where(
                TimeEntry.account_id == account_id, TimeEntry.fingerprint.in_(fps[i:i + 500]))).all())
        self.mappings += [{"connection_id": self.connection.id, "external_id": r["external_id"],
                           "entry_id": ids[r["fingerprint"]], "remote_hash": r["content_hash"]} for r in rows]
        self.inserted += [ids[r["fingerprint"]] for r in rows]

    def flush(self) -> None:
        if self.mappings:
            self.session.execute(insert(SyncedEntry), self.mappings)
        if self.hashes:
            for h in self.hashes:
                self.session.execute(update(SyncedEntry).where(
                    SyncedEntry.connection_id == self.connection.id, SyncedEntry.external_id == h["external_id"])
                    .values(remote_hash=h["remote_hash"]))
        if self.changes:
            self.session.execute(time_entry_changes.insert(), self.changes)
        self.session.flush()


def apply_fetched(session: Session, connection: Connection, tracker: Tracker, fetched: Fetched,
                  now: dt.datetime) -> SyncResult:
    """Merge one reading into the account's entries and route them; writes, never commits."""
    unreadable = [{"id": u.id, "reason": u.reason} for u in fetched.unreadable[:UNREADABLE_SHOWN]]
    if _says_nothing(fetched):
        return SyncResult(running=len(fetched.entries), warnings=list(fetched.warnings), unreadable=unreadable)
    scope = scope_key(connection.tracker, connection.api_url, connection.workspace)
    # Each entry's local date in the zone of the retainer its rules match, else the connection's: as for a CSV.
    frame, warnings = to_frame(fetched.entries, api_spec(tracker.name, tracker.label, tracker.duration_unit),
                               connection.timezone, scope, active_routes(session, connection.account_id))
    result = SyncResult(running=sum(e.running for e in fetched.entries), warnings=fetched.warnings + warnings,
                        unreadable=unreadable)
    result.skipped = sum(not e.running for e in fetched.entries) - len(frame)
    remote = {e.id: e for e in fetched.entries}
    rows = cast(list[dict[str, Any]], frame.to_dict("records"))     # the frame's column names are str
    plan = _classify(session, connection, tracker, rows, remote, _known(session, connection.id),
                     fetched, result)
    days = [d for _, row in plan.changed for d in (plan.old_day[row["external_id"]], _day(row))]
    days += [_day(r) for r in plan.new] + [k.local_date for k in plan.gone.values()] + [d for _, _, d in plan.revived]
    days += [d for c, row in plan.adopted_changed for d in (c.local_date, _day(row))]
    days += [c.local_date for c in plan.duplicates]
    writer = _Writer(session, connection, now)
    with revisions.watch_sync_writes(session, connection.account_id, days, now, connection.upload_id) as revised:
        writer.mappings += plan.mappings
        writer.hashes += plan.hashes
        for entry_id, row in plan.changed:
            writer.change(entry_id, row, plan.old_status[row["external_id"]])
        for candidate, row in plan.adopted_changed:   # the API's values win over the export's
            writer.change(candidate.entry_id, row, candidate.status)
        for candidate in plan.duplicates:
            writer.remove(candidate.entry_id, candidate.status)
        for entry_id, status, _ in plan.revived:
            session.execute(update(TimeEntry).where(TimeEntry.id == entry_id).values(status="active", updated_at=now))
            writer.record(entry_id, "reappeared", {"status": status})
        for k in plan.gone.values():
            writer.remove(k.entry_id, k.status)
        writer.insert(plan.new, f"{tracker.name}-api")
        writer.flush()
        if writer.changes or plan.new:
            upload = session.get(Upload, connection.upload_id) if connection.upload_id else None
            if upload is not None:   # the import history shows the connection's running totals
                upload.imported_at = now
                upload.new_count += len(plan.new)
                upload.changed_count += len(plan.changed)
                upload.missing_count += len(plan.gone)
            # Only the entries written can go elsewhere: the rest keep the routing they were given.
            entries_changed(session, connection.account_id, [
                *(i for i, _ in plan.changed), *(i for i, _, _ in plan.revived),
                *(k.entry_id for k in plan.gone.values()), *writer.inserted,
                *(c.entry_id for c, _ in plan.adopted_changed), *(c.entry_id for c in plan.duplicates)])
    result.new, result.changed, result.removed = len(plan.new), len(plan.changed), len(plan.gone)
    result.duplicates_removed = len(plan.duplicates)
    result.warnings += _unmatchable(session, connection, tracker, frame)
    result.revised_periods = [r.as_json() for r in revised]
    return result


def _says_nothing(fetched: Fetched) -> bool:
    """An increment that listed no stopped entry and no deletion (most syncs, between two bursts of work):
    nothing to compare, write or route, so none of the importer's frame is built."""
    return fetched.window is None and not fetched.deleted and all(e.running for e in fetched.entries)


def _day(row: dict[str, Any]) -> dt.date:
    return pd.Timestamp(row["local_date"]).date()


@dataclass
class _Plan:
    changed: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    new: list[dict[str, Any]] = field(default_factory=list)
    gone: dict[str, _Known] = field(default_factory=dict)
    #: (entry id, status, local date) of CSV entries adopted that did not count: they count again.
    revived: list[tuple[int, str, dt.date]] = field(default_factory=list)
    #: CSV entries adopted whose values differ from the API's: they take the API's.
    adopted_changed: list[tuple[_Candidate, dict[str, Any]]] = field(default_factory=list)
    #: CSV entries that duplicate an entry already synced: removed.
    duplicates: list[_Candidate] = field(default_factory=list)
    mappings: list[dict[str, Any]] = field(default_factory=list)
    hashes: list[dict[str, Any]] = field(default_factory=list)
    old_day: dict[str, dt.date] = field(default_factory=dict)
    old_status: dict[str, str] = field(default_factory=dict)


def _classify(session: Session, connection: Connection, tracker: Tracker, rows: list[dict[str, Any]],
              remote: dict[str, RemoteEntry], known: dict[str, _Known], fetched: Fetched,
              result: SyncResult) -> _Plan:
    """Decide, writing nothing, what each listed entry is (see the module docstring)."""
    plan = _Plan()
    unmatched = [r for r in rows if r["external_id"] not in known]
    reclaim = _reclaimable(session, connection.account_id, [r["fingerprint"] for r in unmatched])
    days = [_day(r) for r in rows]
    pool = _candidates(session, connection.account_id, tracker.csv_format, min(days), max(days)) if days else {}
    for row in rows:
        ext = row["external_id"]
        mine = known.get(ext)
        if mine is None and row["fingerprint"] in reclaim:
            mine = reclaim[row["fingerprint"]]
            plan.mappings.append(_mapping(connection, ext, mine.entry_id, row))
        elif mine is not None and mine.remote_hash != row["content_hash"]:
            plan.hashes.append({"external_id": ext, "remote_hash": row["content_hash"]})
        if mine is not None:
            duplicate = _adopt(pool, row, remote[ext])
            if duplicate is not None:
                plan.duplicates.append(duplicate)
            if mine.remote_hash != row["content_hash"] or mine.status != "active":
                plan.changed.append((mine.entry_id, row))
                plan.old_day[ext], plan.old_status[ext] = mine.local_date, mine.status
            else:
                result.unchanged += 1
            continue
        csv_entry = _adopt(pool, row, remote[ext])
        if csv_entry is None:
            plan.new.append(row)
            continue
        plan.mappings.append(_mapping(connection, ext, csv_entry.entry_id, row))
        result.adopted += 1
        if csv_entry.content_hash != row["content_hash"]:
            plan.adopted_changed.append((csv_entry, row))
        elif csv_entry.status != "active":
            plan.revived.append((csv_entry.entry_id, csv_entry.status, csv_entry.local_date))
    unreadable = {u.id for u in fetched.unreadable}
    plan.gone = {ext: known[ext] for ext in _gone(known, remote, fetched, result) if ext not in unreadable}
    return plan


def _mapping(connection: Connection, ext: str, entry_id: int, row: dict[str, Any]) -> dict[str, Any]:
    return {"connection_id": connection.id, "external_id": ext, "entry_id": entry_id,
            "remote_hash": row["content_hash"]}


#: CSV formats of a tracker whose rows are not single entries (a day's total), so no entry can adopt them.
SUMMARY_FORMATS = {"clockify": ("clockify-shared",)}


def _unmatchable(session: Session, connection: Connection, tracker: Tracker, frame: pd.DataFrame) -> list[str]:
    """Warn when summary CSV rows of this tracker lie where the sync brings entries: they count twice."""
    formats = SUMMARY_FORMATS.get(tracker.name)
    if not formats or frame.empty:
        return []
    first, last = frame["local_date"].min().date(), frame["local_date"].max().date()
    te = TimeEntry
    n = session.scalar(select(func.count(te.id)).where(
        te.account_id == connection.account_id, te.source_format.in_(formats), te.status != "removed",
        te.local_date.between(first, last))) or 0
    if not n:
        return []
    return [f"{n} entries imported from {tracker.label} summary reports (one row a day) lie in the synced dates "
            "and cannot be matched to single entries, so those days count twice."]


def _gone(known: dict[str, _Known], remote: dict[str, RemoteEntry], fetched: Fetched, result: SyncResult) -> list[str]:
    """Known, counting entries the tracker deleted: reported so, or missing from a window read in full."""
    gone = {ext for ext in fetched.deleted if ext in known and known[ext].status in COUNTING}
    if fetched.window is not None:
        first, last = fetched.window
        vanished = {ext for ext, k in known.items() if ext not in remote and k.status in COUNTING
                    and first <= k.local_date <= last}
        if not remote and len(vanished) >= EMPTY_WINDOW_GUARD:
            result.warnings.append(f"The tracker listed no entries from {first} to {last}, where {len(vanished)} "
                                   "were known; they were kept. If they were deleted there, sync again.")
            vanished = set()
        gone |= vanished
    return sorted(gone)
