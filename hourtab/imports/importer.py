"""The import service: a file into ``time_entries``, idempotently, with the upload kept for audit.

Classification against what the account already has (by fingerprint):

* **new**: fingerprint not stored yet; inserted with ``ON CONFLICT DO NOTHING`` on
  (account_id, fingerprint), so a concurrent import of an overlapping file cannot duplicate it;
* **unchanged**: same fingerprint, same values;
* **changed**: same fingerprint, different duration, description, times…; updated, old values kept
  in ``time_entry_changes``;
* **missing upstream**: active entries of the same format and user on dates this file covers, that
  the file no longer has; kept (status ``missing_upstream``) until the consultant confirms removal;
* **skipped**: bad rows left out because the consultant chose "import the valid rows".

Every import and confirmed removal assigns the entries to retainers in the same transaction.
Nothing here commits: callers wrap ``import_file`` in ``with transaction(session):`` so a refused
or failed import leaves the database exactly as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from itertools import repeat
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.db import columns, insert_new_rows, utcnow
from hourtab.core.scoping import get_owned, select_owned
from hourtab.core.staging import read_limited
from hourtab.imports.coverage import coverage_of, covered_ids
from hourtab.imports.diff import build_diff
from hourtab.imports.removal import confirm_removal as confirm_removal  # kept importable from here
from hourtab.imports.synced import synced_twins
from hourtab.retainers import changes
from hourtab.retainers.assign import entries_changed
from hourtab.retainers.destinations import upload_destinations
from hourtab.retainers.models import Retainer
from hourtab.retainers.revisions import watch_closed_periods
from hourtab.timesheets.canonical import (
    arrow_text,
    integers,
    iso_dates,
    join_fields,
    sha256_hex,
    sqlite_datetimes,
)
from hourtab.timesheets.errors import (
    MAX_LISTED_ERRORS,
    CsvTooLarge,
    RowsRejected,
    TimesheetError,
    UnknownRetainer,
)
from hourtab.timesheets.models import TimeEntry, TimeEntryChange, Upload, time_entries, time_entry_changes
from hourtab.timesheets.parsed import BytesSource, Source
from hourtab.timesheets.profiles import get_profile
from hourtab.timesheets.reader import DEFAULT_MAX_BYTES
from hourtab.timesheets.report import ReadReport
from hourtab.timesheets.zone import upload_zone

#: Fields whose difference makes a stored entry "changed" (identity fields are in the fingerprint).
COMPARED = ("duration_s", "description", "client", "project", "task", "tags", "billable", "start_at", "end_at",
            "local_date", "user_name", "timezone")


#: What each upload status means, as the import history says it.
UPLOAD_STATES = {"imported": "imported", "staged": "waiting for your confirmation",
                 "reading": "being read in the background",
                 "bad_rows": "waiting: some rows are bad", "needs_date_order": "waiting for a date order",
                 "needs_mapping": "waiting for a column mapping", "refused": "refused"}


@dataclass
class ImportResult:
    report: ReadReport
    upload_id: int | None = None
    new: int = 0
    unchanged: int = 0
    changed: int = 0
    missing: int = 0
    skipped: int = 0
    #: Rows recognised as entries the tracker's live sync already brought (not added again).
    adopted: int = 0
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)
    #: The row-by-row diff (see ``diff.build_diff``), for a dry run's report.
    diff: dict[str, Any] | None = None
    #: Where the entries count (``retainers.destinations``): per retainer, and unassigned.
    routing: dict[str, Any] | None = None

    def counts(self) -> dict[str, int]:
        return {"new": self.new, "unchanged": self.unchanged, "changed": self.changed,
                "missing": self.missing, "skipped": self.skipped, "adopted": self.adopted}

    def as_json(self) -> dict[str, Any]:
        return {"upload_id": self.upload_id, "dry_run": self.dry_run, "format": self.report.format,
                "entries": self.report.entries, "total_seconds": self.report.total_seconds,
                **self.counts(), "warnings": self.report.warnings + self.notes, "routing": self.routing}


@dataclass(frozen=True)
class ImportOptions:
    format: str = "auto"
    date_order: str | None = None
    timezone: str | None = None
    mapping: dict[str, str] | None = None
    duration_unit: str = "auto"
    profile: str | None = None
    skip_invalid: bool = False
    retainer_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, False, "auto", {})}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ImportOptions:
        """The options kept on an upload row (its other keys, such as ``zones``, are left out)."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if values.get(f.name) not in (None, "")})

    def with_changes(self, changes: dict[str, Any]) -> ImportOptions:
        return replace(self, **{k: v for k, v in changes.items() if k in {f.name for f in fields(self)}})


def read_for_account(session: Session, account: Account, source: Source,
                     options: ImportOptions) -> tuple[pd.DataFrame, ReadReport]:
    """The file's entries through ``source`` (parsed, or loaded from the staged parse), with the
    upload's time zone (see ``zone``) and saved profile filled in. Every row is read in that one
    zone: the exporting person's clock, whichever retainer a row counts against."""
    _check_retainer(session, account, options.retainer_id)
    mapping, unit, order = options.mapping, options.duration_unit, options.date_order
    if options.profile:
        profile = get_profile(session, account, options.profile)
        mapping, unit, order = profile.mapping, profile.duration_unit, order or profile.date_order
    known_format = None if mapping or options.format in ("", "auto") else options.format
    zone = upload_zone(session, account, options.timezone, known_format)

    def read(name: str) -> tuple[pd.DataFrame, ReadReport]:
        return source.read(format=options.format, date_order=order, timezone=name, mapping=mapping,
                           duration_unit=unit)

    frame, report = read(zone.name)
    if known_format is None and not options.timezone:  # the tracker is known once the file is read
        found = upload_zone(session, account, None, report.format)
        if found.name != zone.name:
            frame, report = read(found.name)
        zone = found
    report.timezone, report.timezone_why, report.zone_warning = zone.name, zone.why, zone.warning
    report.zones = [{"zone": zone.name, "why": zone.why, "entries": len(frame), "retainers": []}]
    return frame, report


def _check_retainer(session: Session, account: Account, retainer_id: int | None) -> None:
    """An upload may only be recorded against one of the importing account's own retainers."""
    if retainer_id is None:
        return
    if not 0 < retainer_id < 2**63:
        raise UnknownRetainer(retainer_id)
    get_owned(session, Retainer, account.id, retainer_id, missing=UnknownRetainer(retainer_id))


def import_file(session: Session, account: Account, data: bytes | BinaryIO, filename: str, *,
                format: str = "auto",  # noqa: A002
                date_order: str | None = None, timezone: str | None = None,
                mapping: dict[str, str] | None = None, duration_unit: str = "auto", profile: str | None = None,
                skip_invalid: bool = False, dry_run: bool = False, retainer_id: int | None = None,
                created_by: str | None = None, max_bytes: int | None = DEFAULT_MAX_BYTES) -> ImportResult:
    """Read ``data`` (bytes or a binary file) from memory and merge it into the account's entries;
    never commits. The upload row keeps no bytes: ``uploads.stage_and_import`` is the same with the file
    kept in the blob store (what the CLI, the job and the demo use). A dry run writes nothing.
    """
    options = ImportOptions(format=format, date_order=date_order, timezone=timezone, mapping=mapping,
                            duration_unit=duration_unit, profile=profile, skip_invalid=skip_invalid,
                            retainer_id=retainer_id)
    who = created_by if created_by is not None else account.email
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    source = BytesSource(read_limited(stream, max_bytes, _too_large))
    frame, report = read_for_account(session, account, source, options)
    refuse_unless_allowed(report, skip_invalid)
    if dry_run:
        result = _classify_only(session, account, frame, report, retainer_id)
        result.dry_run = True
        return result
    raw = source.data
    upload = Upload(account_id=account.id, filename=safe_name(filename), blob_key=None, size_bytes=len(raw),
                    sha256=hashlib.sha256(raw).hexdigest(), status="staged", created_by=who)
    session.add(upload)
    session.flush()
    return merge_read_entries(session, account, upload, frame, report, options)


def _too_large(size: int, limit: int) -> CsvTooLarge:
    return CsvTooLarge(size, limit, streamed=True)


def safe_name(filename: str) -> str:
    name = (filename or "upload.csv").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return "".join(ch for ch in name if ch.isprintable())[:255] or "upload.csv"


def refuse_unless_allowed(report: ReadReport, skip_invalid: bool) -> None:
    if report.errors and not skip_invalid:
        raise RowsRejected(report.errors, total=len(report.errors))
    if report.entries == 0:
        raise TimesheetError("No valid time entries in the file; nothing to import.")


# --- classification --------------------------------------------------------------------------------

def _existing(session: Session, account: Account, frame: pd.DataFrame) -> pd.DataFrame:
    """Stored entries on the file's dates (± a day, for time-zone edges): identity and digest only."""
    first = frame["local_date"].min().date() - dt.timedelta(days=1)
    last = frame["local_date"].max().date() + dt.timedelta(days=1)
    te = TimeEntry
    cols = ["id", "fingerprint", "content_hash", "status", "source_format", "user_name", "local_date"]
    existing = pd.DataFrame(columns(session, select(*(getattr(te, c) for c in cols))
                                    .where(te.account_id == account.id, te.local_date.between(first, last)), cols))
    return existing.astype({"id": "int64", **{c: "str" for c in cols[1:-1]}}).assign(
        local_date=pd.to_datetime(existing["local_date"]))


def content_hashes(frame: pd.DataFrame) -> pd.Series:
    """sha256 over the compared fields, in a fixed text form (times as UTC epoch seconds)."""
    def epoch(col: str) -> pa.Array:
        values = frame[col]
        seconds = integers(values.dt.as_unit("s").array.asi8)
        return pc.if_else(pa.array(values.notna().to_numpy()), seconds, "")

    flags = frame["billable"].astype("object").map({True: "1", False: "0"}).fillna("")
    text = join_fields([integers(frame["duration_s"].to_numpy()), *(arrow_text(frame[c]) for c in
                 ("description", "client", "project", "task", "tags")), arrow_text(flags),
                 epoch("start_at"), epoch("end_at"), iso_dates(frame["local_date"]),
                 arrow_text(frame["user_name"]), arrow_text(frame["timezone"])])
    return sha256_hex(text, frame.index)


def _old_values(session: Session, ids: list[int]) -> dict[int, dict[str, Any]]:
    """The full previous values of the (few) entries an import changes, for their history."""
    found: dict[int, dict[str, Any]] = {}
    for i in range(0, len(ids), 1000):
        for entry in session.scalars(select(TimeEntry).where(TimeEntry.id.in_(ids[i:i + 1000]))):
            found[entry.id] = {c: _json_safe(getattr(entry, c)) for c in (*COMPARED, "status")}
    return found


def _isin(values: pd.Series, candidates: pd.Series) -> np.ndarray:
    """Hash-set membership through pyarrow (pandas' own isin on strings loops in Python)."""
    if not len(values):
        return np.zeros(0, bool)
    found = pc.is_in(arrow_text(values.astype("str")), value_set=arrow_text(candidates.astype("str")))
    return found.to_numpy(zero_copy_only=False)


def _positions(values: pd.Series, candidates: pd.Series) -> np.ndarray:
    """Where each value sits in ``candidates`` (unique), -1 where absent; one hash join in pyarrow."""
    if not len(values):
        return np.zeros(0, np.int64)
    found = pc.index_in(arrow_text(values.astype("str")), value_set=arrow_text(candidates.astype("str")))
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


@dataclass
class _Plan:
    new: pd.DataFrame
    changed_new: pd.DataFrame
    changed_old: pd.DataFrame
    unchanged: int
    missing: pd.DataFrame
    notes: list[str]
    #: The file's rows, the stored entry each one is (-1: a new entry) and whether the import
    #: writes it (new or changed), in the same order.
    frame: pd.DataFrame
    known_ids: np.ndarray
    touched: np.ndarray
    scope: str = ""
    #: Rows that are entries the tracker's live sync already brought (``synced``): not added again.
    adopted: int = 0


def _plan(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport) -> _Plan:
    frame = frame.assign(content_hash=content_hashes(frame))
    existing = _existing(session, account, frame)
    where = _positions(frame["fingerprint"], existing["fingerprint"])  # fingerprints are unique per account
    known = where >= 0
    twins = np.full(len(frame), -1, dtype=np.int64)
    twins[~known] = synced_twins(session, account.id, report.format, frame.loc[~known])
    adopted = twins >= 0
    new = frame.loc[~known & ~adopted]
    matched = frame.loc[known].reset_index(drop=True)
    old = existing.iloc[where[known]].reset_index(drop=True)
    differs = ((matched["content_hash"].to_numpy() != old["content_hash"].astype("str").to_numpy())
               | (old["status"].to_numpy() != "active")) if len(matched) else np.zeros(0, bool)
    notes: list[str] = []
    scope = ""
    if report.errors:
        missing = existing.iloc[0:0]
        notes.append("Entries missing from this file were not looked for, because some of its rows were skipped.")
    else:
        covers = coverage_of(frame, report.format)
        candidates = existing.loc[(existing["status"] == "active") & (existing["source_format"] == report.format)
                                  & (existing["local_date"] >= covers.first) & (existing["local_date"] <= covers.last)
                                  & ~_isin(existing["fingerprint"], frame["fingerprint"])]
        keep = covered_ids(session, account.id, [int(i) for i in candidates["id"]], covers)
        missing = candidates.loc[candidates["id"].isin(keep)]
        scope = covers.describe()
    ids = existing["id"].to_numpy(dtype=np.int64)
    known_ids = np.where(known, ids[np.maximum(where, 0)] if len(ids) else -1, twins)
    touched = ~known & ~adopted
    touched[np.flatnonzero(known)[differs]] = True
    if adopted.any():
        notes.append(f"{int(adopted.sum())} rows are entries the live sync of this tracker already brought; they "
                     "were recognised and not added again (the tracker's API figures count).")
    return _Plan(new=new, changed_new=matched.loc[differs], changed_old=old.loc[differs],
                 unchanged=int((~differs).sum()), missing=missing, notes=notes, scope=scope, frame=frame,
                 known_ids=known_ids, touched=touched, adopted=int(adopted.sum()))


def _diff(session: Session, account: Account, plan: _Plan, report: ReadReport,
          retainer_id: int | None) -> dict[str, Any]:
    diff = build_diff(session, plan.new, plan.changed_new, [int(i) for i in plan.changed_old["id"]],
                      [int(i) for i in plan.missing["id"]], report.timezone, plan.scope)
    diff["adopted_count"] = plan.adopted
    diff["routing"] = upload_destinations(session, account.id, plan.frame, plan.known_ids, retainer_id,
                                          report.zones, touched=plan.touched)
    return diff


def preview_diff(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport,
                 retainer_id: int | None) -> dict[str, Any]:
    """What confirming would do, row by row (reads only)."""
    if report.entries == 0:
        return build_diff(session, frame, frame, [], [], report.timezone, "")
    return _diff(session, account, _plan(session, account, frame, report), report, retainer_id)


def _classify_only(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport,
                   retainer_id: int | None) -> ImportResult:
    plan = _plan(session, account, frame, report)
    diff = _diff(session, account, plan, report, retainer_id)
    return ImportResult(report=report, new=len(plan.new), unchanged=plan.unchanged, changed=len(plan.changed_new),
                        missing=len(plan.missing), skipped=_skipped_rows(report), notes=plan.notes, adopted=plan.adopted,
                        diff=diff, routing=diff["routing"])


def _skipped_rows(report: ReadReport) -> int:
    return len({e.line for e in report.errors})


# --- writing ---------------------------------------------------------------------------------------

def _records(frame: pd.DataFrame, account_id: int, upload_id: int, now: dt.datetime) -> list[dict[str, Any]]:
    """Plain Python values for the driver: aware datetimes or None, dates, bools or None."""
    out = {
        "fingerprint": frame["fingerprint"].tolist(),
        "start_at": _records_times(frame["start_at"]),
        "end_at": _records_times(frame["end_at"]),
        "local_date": [d.date() for d in frame["local_date"]],
        "timezone": frame["timezone"].tolist(),
        "duration_s": frame["duration_s"].astype(int).tolist(),
        "client": frame["client"].tolist(),
        "project": frame["project"].tolist(),
        "task": frame["task"].tolist(),
        "description": frame["description"].tolist(),
        "tags": frame["tags"].tolist(),
        "billable": frame["billable"].astype("object").where(frame["billable"].notna(), None).tolist(),
        "user_name": frame["user_name"].tolist(),
        "source_format": frame["source_format"].tolist(),
        "source_line": frame["line"].astype(int).tolist(),
        "content_hash": frame["content_hash"].tolist(),
    }
    keys = list(out)
    fixed = {"account_id": account_id, "upload_id": upload_id, "status": "active", "updated_at": now}
    return [{**fixed, **dict(zip(keys, row, strict=True))} for row in zip(*out.values(), strict=True)]


def _records_times(values: pd.Series) -> list[Any]:
    py = values.dt.to_pydatetime()
    mask = values.isna().to_numpy()
    return [None if m else v for v, m in zip(py, mask, strict=True)]


INSERT_COLUMNS = ("account_id", "upload_id", "status", "updated_at", "fingerprint", "content_hash", "start_at",
                  "end_at", "local_date", "timezone", "duration_s", "client", "project", "task", "description",
                  "tags", "billable", "user_name", "source_format", "source_line")


def _driver_rows(frame: pd.DataFrame, account_id: int, upload_id: int, now: dt.datetime,
                 dialect: str) -> Iterator[tuple]:
    """New entries as driver-ready tuples in ``INSERT_COLUMNS`` order, converted a column at a time.

    Times are UTC text as SQLAlchemy stores them in SQLite (``YYYY-MM-DD HH:MM:SS.ffffff``), with
    ``+00`` on PostgreSQL so ``timestamptz`` reads them exactly; dates are ISO text. Converting per
    value (Python datetimes through each type's bind hook) costs seconds per 100,000 entries.
    """
    offset = "+00" if dialect == "postgresql" else ""

    def times(col: str) -> list:
        text = sqlite_datetimes(frame[col])
        return (pc.binary_join_element_wise(text, offset, "") if offset else text).to_pylist()

    n = len(frame)
    stamp = now.astimezone(dt.UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f") + offset
    values = {
        "account_id": repeat(account_id, n), "upload_id": repeat(upload_id, n), "status": repeat("active", n),
        "updated_at": repeat(stamp, n), "start_at": times("start_at"), "end_at": times("end_at"),
        "local_date": iso_dates(frame["local_date"]).to_pylist(),
        "duration_s": frame["duration_s"].astype(int).tolist(), "source_line": frame["line"].astype(int).tolist(),
        "billable": frame["billable"].astype("object").where(frame["billable"].notna(), None).tolist(),
    }
    return zip(*(values[c] if c in values else frame[c].tolist() for c in INSERT_COLUMNS), strict=True)


def _insert_new(session: Session, frame: pd.DataFrame, account_id: int, upload_id: int, now: dt.datetime) -> None:
    """Insert the new entries; a row another import stored meanwhile (same fingerprint) is skipped."""
    rows = _driver_rows(frame, account_id, upload_id, now, session.get_bind().dialect.name)
    insert_new_rows(session, time_entries, INSERT_COLUMNS, rows, conflict=("account_id", "fingerprint"),
                    order_by="source_line")


def _json_safe(value: Any) -> Any:
    if value is None or (not isinstance(value, str | bool) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp | dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def merge_read_entries(session: Session, account: Account, upload: Upload, frame: pd.DataFrame, report: ReadReport,
                       options: ImportOptions, confirmed: str | bool | None = True) -> ImportResult:
    """Merge the read entries into the account's, recording what it did on ``upload``.

    ``confirmed``: unless ``True``, an import that would revise a closed period is rolled back and
    refused with its preview (``retainers.changes.NeedsConfirmation``).
    """
    plan = _plan(session, account, frame, report)
    upload.diff = _diff(session, account, plan, report, options.retainer_id)
    # A late import into a closed period revises it, visibly (retainers.revisions). Only the rows
    # it writes can change what counts where; an import that writes none needs no watching.
    since = _earliest(plan)

    def write() -> ImportResult:
        with watch_closed_periods(session, account.id, "import", since=since, upload_id=upload.id) if since \
                else nullcontext():
            return _write(session, account, upload, plan, report, options)

    guarded = since is not None and confirmed is not True
    result = changes.apply(session, account.id, write, confirm=confirmed, moves=False)[0] if guarded else write()
    result.routing = upload.diff["routing"]
    return result


def _earliest(plan: _Plan) -> dt.date | None:
    """The first day the import changes (a day early: a tracker's date can be the day before the
    retainer's), or ``None`` when it writes no entry."""
    days = [d for d in (plan.frame.loc[plan.touched, "local_date"].min(), plan.changed_old["local_date"].min())
            if not pd.isna(d)]
    return min(days).date() - dt.timedelta(days=1) if days else None


def _write(session: Session, account: Account, upload: Upload, plan: _Plan, report: ReadReport,
           options: ImportOptions) -> ImportResult:
    now = utcnow()
    if len(plan.new):
        _insert_new(session, plan.new, account.id, upload.id, now)
    inserted = session.scalar(select(func.count(TimeEntry.id)).where(TimeEntry.upload_id == upload.id)) or 0
    raced = len(plan.new) - inserted  # stored meanwhile by a concurrent import: not new for this one

    changes: list[dict[str, Any]] = []
    if len(plan.changed_new):
        fresh = _records(plan.changed_new, account.id, upload.id, now)
        ids = [int(i) for i in plan.changed_old["id"]]
        previous = _old_values(session, ids)
        updates = []
        for row, entry_id in zip(fresh, ids, strict=True):
            old = previous[entry_id]
            changes.append({"account_id": account.id, "entry_id": entry_id, "upload_id": upload.id,
                            "kind": "changed" if old["status"] == "active" else "reappeared",
                            "old_values": old, "changed_at": now})
            updates.append({"id": entry_id, **{k: row[k] for k in (*COMPARED, "source_line", "content_hash")},
                            "status": "active", "updated_at": now})
        session.execute(update(TimeEntry), updates)
    if len(plan.missing):
        ids = [int(i) for i in plan.missing["id"]]
        session.execute(update(TimeEntry), [{"id": i, "status": "missing_upstream", "updated_at": now} for i in ids])
        changes.extend({"account_id": account.id, "entry_id": i, "upload_id": upload.id, "kind": "missing_upstream",
                        "old_values": {"status": "active"}, "changed_at": now} for i in ids)
    if changes:
        session.execute(time_entry_changes.insert(), changes)

    skipped = _skipped_rows(report)
    upload.status = "imported"
    upload.imported_at = now
    upload.format = report.format
    upload.explanation = report.explanation
    upload.options = {**options.as_dict(), "timezone": report.timezone, "date_order": report.date_order,
                      "zones": report.zones}
    upload.retainer_id = options.retainer_id
    upload.rows_count = report.rows
    upload.new_count = inserted
    upload.unchanged_count = plan.unchanged + raced
    upload.changed_count = len(plan.changed_new)
    upload.missing_count = len(plan.missing)
    upload.skipped_count = skipped
    upload.total_seconds = report.total_seconds
    upload.first_date = dt.date.fromisoformat(report.first_date) if report.first_date else None
    upload.last_date = dt.date.fromisoformat(report.last_date) if report.last_date else None
    upload.skipped_rows = [e.as_dict() for e in report.errors[:max(MAX_LISTED_ERRORS * 20, 1000)]]
    upload.warnings = report.warnings + plan.notes
    session.flush()
    brought = session.scalars(select(TimeEntry.id).where(TimeEntry.upload_id == upload.id)).all()
    # Only the rows written can go elsewhere: the rest keep the routing they were given.
    entries_changed(session, account.id, [*brought, *(int(i) for i in plan.changed_old["id"])])
    return ImportResult(report=report, upload_id=upload.id, new=inserted, unchanged=plan.unchanged + raced,
                        changed=len(plan.changed_new), missing=len(plan.missing), skipped=skipped, adopted=plan.adopted,
                        notes=plan.notes)


def upload_entries(session: Session, account: Account, upload_id: int, status: str | None = None,
                   limit: int = 500) -> list[TimeEntry]:
    """Entries an upload brought in (or, with ``status``, those it flagged)."""
    get_owned(session, Upload, account.id, upload_id)
    query = select_owned(TimeEntry, account.id)
    if status == "missing_upstream":
        flagged = select(TimeEntryChange.entry_id).where(TimeEntryChange.upload_id == upload_id,
                                                         TimeEntryChange.kind == "missing_upstream")
        query = query.where(TimeEntry.id.in_(flagged), TimeEntry.status == "missing_upstream")
    else:
        query = query.where(TimeEntry.upload_id == upload_id)
    return list(session.scalars(query.order_by(TimeEntry.local_date, TimeEntry.start_at).limit(limit)))
