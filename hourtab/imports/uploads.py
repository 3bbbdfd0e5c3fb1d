"""The upload pipeline: stage a CSV once, preview and confirm it from its kept parse.

1. ``stage_csv`` streams the file into the blob store (``hourtab.core.staging``: its size checked
   once while it streams, one hash, one put), records the upload with its options, and parses it
   once, keeping the parse beside the bytes (``parsed``).
2. ``preview`` (a GET: it writes nothing) and ``import_staged`` read that parse. Options live on the
   upload row; ``set_options`` changes them and parses again only when the change names another
   parse (a time zone, a date order, a mapping), keeping that one too.
3. A file above the caller's ``read_later_above`` is staged without its parse (status ``reading``):
   a queued job reads it (``read_staged``) and confirms it, so a large export never holds a web
   worker; both report their progress (``hourtab.core.progress``).

The CLI, the web pages and the import job each call one of these; nothing here commits.
"""

from __future__ import annotations

import io
from typing import IO, Any, BinaryIO

import pandas as pd
from sqlalchemy.orm import Session, load_only

from hourtab.core import progress
from hourtab.core.accounts import Account
from hourtab.core.blobs import BlobStore, joined
from hourtab.core.errors import Conflict, NotFound
from hourtab.core.scoping import get_owned, select_owned
from hourtab.core.staging import stage_stream
from hourtab.imports import importer
from hourtab.imports.classify import preview_diff
from hourtab.imports.importer import (
    ImportOptions,
    ImportResult,
    merge_read_entries,
    read_for_account,
    refuse_unless_allowed,
    safe_name,
)
from hourtab.timesheets.encoding import to_utf8
from hourtab.timesheets.errors import AmbiguousDateOrder, CsvTooLarge, TimesheetError, UnknownFormat
from hourtab.timesheets.models import Upload
from hourtab.timesheets.parsed import StagedSource
from hourtab.timesheets.reader import DEFAULT_MAX_BYTES
from hourtab.timesheets.report import ReadReport

#: What the import history lists of an upload: never its diff or skipped rows (and no bytes: those are blobs).
HISTORY_COLUMNS = ("id", "account_id", "filename", "status", "format", "explanation", "created_at", "created_by",
                   "new_count", "unchanged_count", "changed_count", "missing_count", "skipped_count")


def csv_key(account_id: int, sha256: str) -> str:
    """Where a CSV upload's bytes are kept: by account and content, so a file uploaded twice is kept once."""
    return f"imports/{account_id}/{sha256}/upload.csv"


def stage_csv(session: Session, account: Account, stream: IO[bytes], filename: str, blobs: BlobStore, *,
              created_by: str, max_bytes: int | None = DEFAULT_MAX_BYTES,
              options: ImportOptions | None = None, assess: bool = True,
              read_later_above: int | None = None) -> Upload:
    """Keep a file for preview-then-confirm: staged, with its options; nothing is imported yet.

    Over ``max_bytes`` it is refused while it streams in, before anything is stored. With ``assess``
    it is parsed once (and the parse kept) to record why it waits, if it does; a file larger than
    ``read_later_above`` bytes is left ``reading``, for a job to parse (``read_staged``).
    """
    options = options or ImportOptions()
    staged = stage_stream(joined(session, blobs), stream, lambda sha: csv_key(account.id, sha),
                          max_bytes=max_bytes, too_large=lambda size, limit: CsvTooLarge(size, limit, streamed=True))
    if staged.size == 0:
        raise TimesheetError("The file is empty.")
    upload = Upload(account_id=account.id, filename=safe_name(filename), blob_key=staged.key,
                    size_bytes=staged.size, sha256=staged.sha256, status="staged", created_by=created_by,
                    options=options.as_dict())
    session.add(upload)
    session.flush()
    if queued_for_import(upload, read_later_above):
        _leave_for_a_job(upload)
    elif assess:
        _assess(session, account, upload, blobs)
    return upload


def read_staged(session: Session, account: Account, upload_id: int, blobs: BlobStore) -> Upload:
    """Parse an upload staged for reading later (the queued read of a large file), keeping the parse."""
    upload = _staged(session, account, upload_id)
    _assess(session, account, upload, blobs)
    return upload


def queued_for_import(upload: Upload, above: int | None) -> bool:
    """Whether confirming this upload is work for a queued job (a file over ``above`` bytes)."""
    return above is not None and upload.size_bytes > above


def _leave_for_a_job(upload: Upload) -> None:
    upload.status, upload.explanation = "reading", "Large file: HourTab is reading it in the background."


def stage_and_import(session: Session, account: Account, data: bytes | BinaryIO, filename: str, blobs: BlobStore, *,
                     created_by: str, max_bytes: int | None = DEFAULT_MAX_BYTES, dry_run: bool = False,
                     confirmed: str | bool | None = True, **options: Any) -> ImportResult:
    """Stage and confirm in one go (``hourtab import``, the import job, the demo): the file kept in
    ``blobs``, parsed once. A dry run stores nothing (``importer.import_file`` reads it from memory).
    ``confirmed``: see ``import_staged``."""
    if dry_run:
        return importer.import_file(session, account, data, filename, dry_run=True, created_by=created_by,
                                    max_bytes=max_bytes, **options)
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    upload = stage_csv(session, account, stream, filename, blobs, created_by=created_by, max_bytes=max_bytes,
                       options=ImportOptions(**options), assess=False)
    # Staging wrote the upload row, so this transaction is a writer now: no progress reports (on
    # SQLite each would wait for it from another connection).
    with progress.quiet():
        return import_staged(session, account, upload.id, blobs, confirmed=confirmed)


def options_of(upload: Upload) -> ImportOptions:
    return ImportOptions.from_dict(upload.options or {})


def set_options(session: Session, account: Account, upload_id: int, blobs: BlobStore,
                changes: dict[str, Any], read_later_above: int | None = None) -> Upload:
    """Change a staged upload's options (the preview's and mapping page's forms) and assess it again
    (or, for a file over ``read_later_above`` bytes, leave it ``reading`` for a job, as ``stage_csv``)."""
    upload = _staged(session, account, upload_id)
    upload.options = options_of(upload).with_changes(changes).as_dict()
    if queued_for_import(upload, read_later_above):
        _leave_for_a_job(upload)
        session.flush()
    else:
        _assess(session, account, upload, blobs)
    return upload


def _assess(session: Session, account: Account, upload: Upload, blobs: BlobStore) -> None:
    """Record why a staged upload waits (or that it was refused), for the import history."""
    try:
        _, report = _read(session, account, upload, blobs, options_of(upload))
    except UnknownFormat as e:
        upload.status, upload.explanation = "needs_mapping", str(e)
    except AmbiguousDateOrder as e:
        upload.status, upload.explanation = "needs_date_order", str(e)
    except TimesheetError as e:
        upload.status, upload.explanation = "refused", str(e)
    else:
        upload.status = "bad_rows" if report.errors else "staged"
        upload.explanation = report.explanation
        upload.format = report.format
    session.flush()


def preview(session: Session, account: Account, upload_id: int, blobs: BlobStore,
            override: dict[str, Any] | None = None
            ) -> tuple[pd.DataFrame, ReadReport, dict[str, Any], ImportOptions]:
    """What confirming would do, row by row, with the upload's options (and ``override``, a one-off
    reading from a link's query string); reads only, so a parse it has to run is not kept."""
    upload = get_owned(session, Upload, account.id, upload_id)
    options = options_of(upload).with_changes(override or {})
    frame, report = read_for_account(session, account, _source(upload, blobs, keep=False), options)
    return frame, report, preview_diff(session, account, frame, report, options.retainer_id), options


def import_staged(session: Session, account: Account, upload_id: int, blobs: BlobStore,
                  changes: dict[str, Any] | None = None, confirmed: str | bool | None = True) -> ImportResult:
    """Import a staged upload with its options (``changes`` saved on it first: the confirm form's own).

    ``confirmed``: unless ``True``, an import that would revise a closed period the client has seen
    is refused (``NeedsConfirmation``) and nothing is written."""
    upload = _staged(session, account, upload_id)
    options = options_of(upload).with_changes(changes or {})
    frame, report = _read(session, account, upload, blobs, options)
    refuse_unless_allowed(report, options.skip_invalid)
    # Reported before the first write: on SQLite a report (another connection) waits for the
    # writer, so the entries are written without one.
    progress.report("Writing entries", 0, len(frame))
    upload.options = options.as_dict()
    return merge_read_entries(session, account, upload, frame, report, options, confirmed)


def _read(session: Session, account: Account, upload: Upload, blobs: BlobStore,
          options: ImportOptions) -> tuple[pd.DataFrame, ReadReport]:
    """The upload's entries with ``options``, from its kept parse or parsed now (and kept)."""
    progress.report("Reading the export", 0, upload.size_bytes)
    read = read_for_account(session, account, _source(upload, blobs, keep=True), options)
    progress.report("Reading the export", upload.size_bytes, upload.size_bytes)
    return read


def original(session: Session, account: Account, upload_id: int, blobs: BlobStore) -> tuple[Upload, bytes]:
    """The upload and its bytes, as they were uploaded."""
    upload = get_owned(session, Upload, account.id, upload_id)
    if not upload.blob_key:
        raise NotFound("This upload has no file: its entries came from a tracker's live sync.")
    return upload, blobs.get_bytes(upload.blob_key)


def head_text(session: Session, account: Account, upload_id: int, blobs: BlobStore) -> tuple[Upload, str]:
    """The start of the file as text (the mapping page shows its columns and first values)."""
    upload, data = original(session, account, upload_id, blobs)
    return upload, to_utf8(data).head()


def list_uploads(session: Session, account: Account, limit: int = 100) -> list[Upload]:
    """Every upload, newest first, with the history's columns only (no diff, no skipped rows)."""
    query = (select_owned(Upload, account.id).options(load_only(*(getattr(Upload, c) for c in HISTORY_COLUMNS)))
             .order_by(Upload.created_at.desc(), Upload.id.desc()).limit(limit))
    return list(session.scalars(query))


def _staged(session: Session, account: Account, upload_id: int) -> Upload:
    upload = get_owned(session, Upload, account.id, upload_id)
    if upload.status == "imported":
        raise Conflict("This upload was already imported; upload the file again to re-import it.")
    return upload


def _source(upload: Upload, blobs: BlobStore, keep: bool) -> StagedSource:
    if not upload.blob_key:
        raise NotFound("This upload has no file to read.")
    return StagedSource(blobs, upload.blob_key, keep)

