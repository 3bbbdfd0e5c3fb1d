"""The import service: a file into ``time_entries``, idempotently, with the upload kept for audit.

Classification against what the account already has, by fingerprint (``classify``; ``writing``
writes it):

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
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from typing import Any, BinaryIO

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.db import utcnow
from hourtab.core.scoping import get_owned, select_owned
from hourtab.core.staging import read_limited
from hourtab.imports.classify import ImportPlan, plan_import, skipped_rows, upload_diff
from hourtab.imports.removal import confirm_removal as confirm_removal  # kept importable from here
from hourtab.imports.writing import write_plan
from hourtab.retainers import changes
from hourtab.retainers.assign import entries_changed
from hourtab.retainers.models import Retainer
from hourtab.retainers.revisions import watch_closed_periods
from hourtab.timesheets.errors import (
    MAX_LISTED_ERRORS,
    CsvTooLarge,
    RowsRejected,
    TimesheetError,
    UnknownRetainer,
)
from hourtab.timesheets.models import TimeEntry, TimeEntryChange, Upload
from hourtab.timesheets.parsed import BytesSource, Source
from hourtab.timesheets.profiles import get_profile
from hourtab.timesheets.reader import DEFAULT_MAX_BYTES
from hourtab.timesheets.report import ReadReport
from hourtab.timesheets.zone import upload_zone

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
    tracker = None if mapping or options.format in ("", "auto") else options.format
    if tracker is None and not options.timezone:  # the header says which tracker wrote it
        tracker = source.export_format(format=options.format, mapping=mapping, duration_unit=unit)
    zone = upload_zone(session, account, options.timezone, tracker)

    def read(name: str) -> tuple[pd.DataFrame, ReadReport]:
        return source.read(format=options.format, date_order=order, timezone=name, mapping=mapping,
                           duration_unit=unit)

    frame, report = read(zone.name)
    if tracker is None and not options.timezone:  # a source that knows its tracker once read
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


def _classify_only(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport,
                   retainer_id: int | None) -> ImportResult:
    plan = plan_import(session, account, frame, report)
    diff = upload_diff(session, account, plan, report, retainer_id)
    return ImportResult(report=report, new=len(plan.new), unchanged=plan.unchanged, changed=len(plan.changed_new),
                        missing=len(plan.missing), skipped=skipped_rows(report), notes=plan.notes, adopted=plan.adopted,
                        diff=diff, routing=diff["routing"])


def merge_read_entries(session: Session, account: Account, upload: Upload, frame: pd.DataFrame, report: ReadReport,
                       options: ImportOptions, confirmed: str | bool | None = True) -> ImportResult:
    """Merge the read entries into the account's, recording what it did on ``upload``.

    ``confirmed``: unless ``True``, an import that would revise a closed period is rolled back and
    refused with its preview (``retainers.changes.NeedsConfirmation``).
    """
    plan = plan_import(session, account, frame, report)
    upload.diff = upload_diff(session, account, plan, report, options.retainer_id)
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


def _earliest(plan: ImportPlan) -> dt.date | None:
    """The first day the import changes (a day early: a tracker's date can be the day before the
    retainer's), or ``None`` when it writes no entry."""
    days = [d for d in (plan.frame.loc[plan.touched, "local_date"].min(), plan.changed_old["local_date"].min())
            if not pd.isna(d)]
    return min(days).date() - dt.timedelta(days=1) if days else None


def _write(session: Session, account: Account, upload: Upload, plan: ImportPlan, report: ReadReport,
           options: ImportOptions) -> ImportResult:
    now = utcnow()
    inserted = write_plan(session, account.id, upload.id, plan, now)
    raced = len(plan.new) - inserted  # stored meanwhile by a concurrent import: not new for this one

    skipped = skipped_rows(report)
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
