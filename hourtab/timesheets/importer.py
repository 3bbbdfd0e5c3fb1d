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

Nothing here commits: callers wrap ``import_file`` in ``with transaction(session):`` so a refused
or failed import leaves the database exactly as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from hourtab.accounts import Account
from hourtab.db import utcnow
from hourtab.errors import Conflict
from hourtab.scoping import get_owned, select_owned
from hourtab.timesheets.errors import MAX_LISTED_ERRORS, CsvTooLarge, RowsRejected, TimesheetError
from hourtab.timesheets.models import TimeEntry, TimeEntryChange, Upload
from hourtab.timesheets.profiles import get_profile
from hourtab.timesheets.reader import DEFAULT_MAX_BYTES, read_timesheet
from hourtab.timesheets.report import ReadReport

#: Fields whose difference makes a stored entry "changed" (identity fields are in the fingerprint).
COMPARED = ("duration_s", "description", "client", "project", "task", "tags", "billable", "start_at", "end_at",
            "local_date", "user_name", "timezone")
INSERT_BATCH = 5000


@dataclass
class ImportResult:
    report: ReadReport
    upload_id: int | None = None
    new: int = 0
    unchanged: int = 0
    changed: int = 0
    missing: int = 0
    skipped: int = 0
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"new": self.new, "unchanged": self.unchanged, "changed": self.changed,
                "missing": self.missing, "skipped": self.skipped}

    def as_json(self) -> dict[str, Any]:
        return {"upload_id": self.upload_id, "dry_run": self.dry_run, "format": self.report.format,
                "entries": self.report.entries, "total_seconds": self.report.total_seconds,
                **self.counts(), "warnings": self.report.warnings + self.notes}


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


def read_for_account(session: Session, account: Account, data: bytes, options: ImportOptions,
                     max_bytes: int | None = DEFAULT_MAX_BYTES):
    """``read_timesheet`` with the account's time zone and saved profile filled in."""
    mapping, unit, order = options.mapping, options.duration_unit, options.date_order
    if options.profile:
        profile = get_profile(session, account, options.profile)
        mapping, unit, order = profile.mapping, profile.duration_unit, order or profile.date_order
    return read_timesheet(data, format=options.format, date_order=order,
                          timezone=options.timezone or account.timezone or "UTC",
                          mapping=mapping, duration_unit=unit, max_bytes=max_bytes)


def import_file(session: Session, account: Account, data: bytes, filename: str, *, format: str = "auto",  # noqa: A002
                date_order: str | None = None, timezone: str | None = None,
                mapping: dict[str, str] | None = None, duration_unit: str = "auto", profile: str | None = None,
                skip_invalid: bool = False, dry_run: bool = False, retainer_id: int | None = None,
                created_by: str | None = None, max_bytes: int | None = DEFAULT_MAX_BYTES) -> ImportResult:
    """Read ``data`` and merge it into the account's entries; raises typed errors, never commits."""
    options = ImportOptions(format=format, date_order=date_order, timezone=timezone, mapping=mapping,
                            duration_unit=duration_unit, profile=profile, skip_invalid=skip_invalid,
                            retainer_id=retainer_id)
    frame, report = read_for_account(session, account, data, options, max_bytes)
    _refuse_unless_allowed(report, skip_invalid)
    if dry_run:
        result = _classify_only(session, account, frame, report)
        result.dry_run = True
        return result
    upload = Upload(account_id=account.id, filename=_safe_name(filename), content=data, size_bytes=len(data),
                    sha256=hashlib.sha256(data).hexdigest(), status="staged",
                    created_by=created_by if created_by is not None else account.email)
    session.add(upload)
    session.flush()
    return _apply(session, account, upload, frame, report, options)


def stage_upload(session: Session, account: Account, data: bytes, filename: str, created_by: str,
                 max_bytes: int | None = DEFAULT_MAX_BYTES) -> Upload:
    """Keep a file for the browser's preview-then-confirm flow; nothing is imported yet."""
    if max_bytes is not None and len(data) > max_bytes:
        raise CsvTooLarge(len(data), max_bytes)
    if not data:
        raise TimesheetError("The file is empty.")
    upload = Upload(account_id=account.id, filename=_safe_name(filename), content=data, size_bytes=len(data),
                    sha256=hashlib.sha256(data).hexdigest(), status="staged", created_by=created_by)
    session.add(upload)
    session.flush()
    return upload


def import_upload(session: Session, account: Account, upload_id: int, options: ImportOptions,
                  max_bytes: int | None = DEFAULT_MAX_BYTES) -> ImportResult:
    """Confirm a staged upload: import it with the options chosen on the preview page."""
    upload = get_owned(session, Upload, account.id, upload_id)
    if upload.status != "staged":
        raise Conflict("This upload was already imported; upload the file again to re-import it.")
    frame, report = read_for_account(session, account, upload.content, options, max_bytes)
    _refuse_unless_allowed(report, options.skip_invalid)
    return _apply(session, account, upload, frame, report, options)


def confirm_removal(session: Session, account: Account, upload_id: int | None = None,
                    entry_ids: list[int] | None = None) -> int:
    """Mark missing-upstream entries as removed (all, those an upload found, or the listed ids)."""
    query = select_owned(TimeEntry, account.id).where(TimeEntry.status == "missing_upstream")
    if entry_ids is not None:
        query = query.where(TimeEntry.id.in_(entry_ids))
    if upload_id is not None:
        get_owned(session, Upload, account.id, upload_id)
        flagged = select(TimeEntryChange.entry_id).where(TimeEntryChange.account_id == account.id,
                                                         TimeEntryChange.upload_id == upload_id,
                                                         TimeEntryChange.kind == "missing_upstream")
        query = query.where(TimeEntry.id.in_(flagged))
    entries = list(session.scalars(query))
    now = utcnow()
    for entry in entries:
        session.add(TimeEntryChange(account_id=account.id, entry_id=entry.id, upload_id=upload_id,
                                    kind="removed", old_values={"status": entry.status}, changed_at=now))
        entry.status = "removed"
        entry.updated_at = now
    session.flush()
    return len(entries)


def list_uploads(session: Session, account: Account, limit: int = 100) -> list[Upload]:
    query = (select_owned(Upload, account.id).where(Upload.status == "imported")
             .order_by(Upload.created_at.desc(), Upload.id.desc()).limit(limit))
    return list(session.scalars(query))


def _safe_name(filename: str) -> str:
    name = (filename or "upload.csv").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return "".join(ch for ch in name if ch.isprintable())[:255] or "upload.csv"


def _refuse_unless_allowed(report: ReadReport, skip_invalid: bool) -> None:
    if report.errors and not skip_invalid:
        raise RowsRejected(report.errors, total=len(report.errors))
    if report.entries == 0:
        raise TimesheetError("No valid time entries in the file; nothing to import.")


# --- classification --------------------------------------------------------------------------------

def _existing(session: Session, account: Account, frame: pd.DataFrame) -> pd.DataFrame:
    """Stored entries on the file's dates (± a day, for time-zone edges)."""
    cols = ["id", "fingerprint", "status", "source_format", *COMPARED]
    first = frame["local_date"].min().date() - dt.timedelta(days=1)
    last = frame["local_date"].max().date() + dt.timedelta(days=1)
    query = (select(*[getattr(TimeEntry, c) for c in cols])
             .where(TimeEntry.account_id == account.id, TimeEntry.local_date.between(first, last)))
    rows = session.execute(query).all()
    return pd.DataFrame(rows, columns=cols)


def _epoch(series: pd.Series) -> np.ndarray:
    """Seconds since 1970 (or a sentinel for missing) so times compare exactly across sources."""
    values = pd.to_datetime(series, utc=True)
    out = values.astype("datetime64[ns, UTC]").astype("int64") // 1_000_000_000
    return np.where(values.isna(), -(2**62), out)


def _differs(new: pd.DataFrame, old: pd.DataFrame) -> np.ndarray:
    """Row-wise: does any compared field differ? (both frames aligned row by row)."""
    diff = np.zeros(len(new), bool)
    for col in COMPARED:
        if col in ("start_at", "end_at"):
            diff |= _epoch(new[col]) != _epoch(old[col])
        elif col == "local_date":
            a = pd.to_datetime(new[col]).dt.strftime("%Y-%m-%d").to_numpy()
            b = pd.to_datetime(old[col]).dt.strftime("%Y-%m-%d").to_numpy()
            diff |= a != b
        elif col == "billable":
            a = new[col].astype("object").where(new[col].notna(), None).to_numpy()
            b = old[col].astype("object").where(old[col].notna(), None).to_numpy()
            diff |= np.array([x != y for x, y in zip(a, b, strict=True)], bool) if len(a) else diff
        elif col == "duration_s":
            diff |= new[col].to_numpy(np.int64) != old[col].to_numpy(np.int64)
        else:
            diff |= new[col].astype("str").to_numpy() != old[col].fillna("").astype("str").to_numpy()
    return diff


@dataclass
class _Plan:
    new: pd.DataFrame
    changed_new: pd.DataFrame
    changed_old: pd.DataFrame
    unchanged: int
    missing: pd.DataFrame
    notes: list[str]


def _plan(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport) -> _Plan:
    existing = _existing(session, account, frame)
    by_fp = existing.set_index("fingerprint", drop=False)
    known = frame["fingerprint"].isin(by_fp.index)
    new = frame.loc[~known]
    matched = frame.loc[known].reset_index(drop=True)
    old = by_fp.loc[matched["fingerprint"]].reset_index(drop=True)
    differs = _differs(matched, old) | (old["status"].to_numpy() != "active") if len(matched) else np.zeros(0, bool)
    notes: list[str] = []
    if report.errors:
        missing = existing.iloc[0:0]
        notes.append("Entries missing from this file were not looked for, because some of its rows were skipped.")
    else:
        users = set(frame["user_name"].str.strip().str.lower())
        first, last = frame["local_date"].min(), frame["local_date"].max()
        dates = pd.to_datetime(existing["local_date"])
        missing = existing.loc[(existing["status"] == "active") & (existing["source_format"] == report.format)
                               & existing["user_name"].fillna("").str.strip().str.lower().isin(users)
                               & (dates >= first) & (dates <= last)
                               & ~existing["fingerprint"].isin(frame["fingerprint"])]
    return _Plan(new=new, changed_new=matched.loc[differs], changed_old=old.loc[differs],
                 unchanged=int((~differs).sum()), missing=missing, notes=notes)


def _classify_only(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport) -> ImportResult:
    plan = _plan(session, account, frame, report)
    return ImportResult(report=report, new=len(plan.new), unchanged=plan.unchanged, changed=len(plan.changed_new),
                        missing=len(plan.missing), skipped=_skipped_rows(report), notes=plan.notes)


def _skipped_rows(report: ReadReport) -> int:
    return len({e.line for e in report.errors})


# --- writing ---------------------------------------------------------------------------------------

def _records(frame: pd.DataFrame, account_id: int, upload_id: int, now: dt.datetime) -> list[dict[str, Any]]:
    """Plain Python values for the driver: aware datetimes or None, dates, bools or None."""
    def times(col: str) -> list[Any]:
        values = frame[col].dt.to_pydatetime() if len(frame) else []
        mask = frame[col].isna().to_numpy()
        return [None if m else v for v, m in zip(values, mask, strict=True)]

    out = {
        "fingerprint": frame["fingerprint"].tolist(),
        "start_at": times("start_at"),
        "end_at": times("end_at"),
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
    }
    keys = list(out)
    fixed = {"account_id": account_id, "upload_id": upload_id, "status": "active", "updated_at": now}
    return [{**fixed, **dict(zip(keys, row, strict=True))} for row in zip(*out.values(), strict=True)]


def _insert_new(session: Session, rows: list[dict[str, Any]]) -> None:
    dialect = session.get_bind().dialect.name
    make = pg_insert if dialect == "postgresql" else sqlite_insert
    stmt = make(TimeEntry.__table__).on_conflict_do_nothing(index_elements=["account_id", "fingerprint"])
    for i in range(0, len(rows), INSERT_BATCH):
        session.execute(stmt, rows[i:i + INSERT_BATCH])


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


def _apply(session: Session, account: Account, upload: Upload, frame: pd.DataFrame, report: ReadReport,
           options: ImportOptions) -> ImportResult:
    plan = _plan(session, account, frame, report)
    now = utcnow()
    if len(plan.new):
        _insert_new(session, _records(plan.new, account.id, upload.id, now))
    inserted = session.scalar(select(func.count(TimeEntry.id)).where(TimeEntry.upload_id == upload.id)) or 0
    raced = len(plan.new) - inserted  # stored meanwhile by a concurrent import: not new for this one

    changes: list[dict[str, Any]] = []
    if len(plan.changed_new):
        fresh = _records(plan.changed_new, account.id, upload.id, now)
        updates = []
        for row, (_, old) in zip(fresh, plan.changed_old.iterrows(), strict=True):
            changed = {c: _json_safe(old[c]) for c in (*COMPARED, "status")}
            changes.append({"account_id": account.id, "entry_id": int(old["id"]), "upload_id": upload.id,
                            "kind": "changed" if old["status"] == "active" else "reappeared",
                            "old_values": changed, "changed_at": now})
            updates.append({"id": int(old["id"]), **{k: row[k] for k in (*COMPARED, "source_line")},
                            "status": "active", "updated_at": now})
        session.execute(update(TimeEntry), updates)
    if len(plan.missing):
        ids = [int(i) for i in plan.missing["id"]]
        session.execute(update(TimeEntry), [{"id": i, "status": "missing_upstream", "updated_at": now} for i in ids])
        changes.extend({"account_id": account.id, "entry_id": i, "upload_id": upload.id, "kind": "missing_upstream",
                        "old_values": {"status": "active"}, "changed_at": now} for i in ids)
    if changes:
        session.execute(TimeEntryChange.__table__.insert(), changes)

    skipped = _skipped_rows(report)
    upload.status = "imported"
    upload.imported_at = now
    upload.format = report.format
    upload.explanation = report.explanation
    upload.options = {**options.as_dict(), "timezone": report.timezone, "date_order": report.date_order}
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
    return ImportResult(report=report, upload_id=upload.id, new=inserted, unchanged=plan.unchanged + raced,
                        changed=len(plan.changed_new), missing=len(plan.missing), skipped=skipped,
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
