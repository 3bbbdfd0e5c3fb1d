"""The upload pipeline (issue 23 item 4): staged once, size checked while streaming, parsed once.

Real parts only: a real blob store in a temporary folder, real SQLite and PostgreSQL, the real
sample exports. That the preview and the confirm do not parse again is shown by what they can do
without the file: its bytes are removed from the store once it is staged, and both still work
from the parse kept beside them, while an option that needs another parse cannot.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import JSON, bindparam, func, inspect, select, text
from sqlalchemy.exc import SQLAlchemyError

from hourtab.core.blobs import LocalBlobStore
from hourtab.core.db import UTCDateTime, make_engine, transaction
from hourtab.core.errors import NotFound
from hourtab.imports import uploads
from hourtab.imports.importer import ImportOptions
from hourtab.timesheets import read_timesheet
from hourtab.timesheets.errors import CsvTooLarge
from hourtab.timesheets.models import TimeEntry, Upload
from tests.helpers.timesheet_samples import sample

FLORES = "toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_2017-08-31.csv"


class CountingStream(io.BytesIO):
    """A file whose reads are counted, to see how far a refused upload was read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int = -1) -> bytes:
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk


def stored_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def parsed_blobs(root: Path) -> list[str]:
    return [f for f in stored_files(root) if "/parsed-" in f]


def stage(db_session, account, blobs, data: bytes, **options):
    with transaction(db_session):
        return uploads.stage_csv(db_session, account, io.BytesIO(data), "export.csv", blobs, created_by="t",
                                 options=ImportOptions(**options))


def test_an_oversized_upload_is_refused_while_it_streams_and_nothing_is_stored(db_session, account, tmp_path):
    root = tmp_path / "blobs"
    blobs = LocalBlobStore(root)
    data = sample(FLORES) * 200  # about 9 MiB
    stream = CountingStream(data)
    limit = 2 * 1048576
    with pytest.raises(CsvTooLarge) as refused, transaction(db_session):
        uploads.stage_csv(db_session, account, stream, "big.csv", blobs, created_by="t", max_bytes=limit)
    assert "larger than 2 MiB" in str(refused.value) and "HOURTAB_CSV_MAX_MB" in str(refused.value)
    assert stream.taken <= limit + (1 << 20) < len(data)  # it stopped reading at the first chunk past the limit
    assert stored_files(root) == [] and db_session.scalar(select(func.count(Upload.id))) == 0


def test_preview_and_confirm_read_the_kept_parse_not_the_file(db_session, account, tmp_path):
    root = tmp_path / "blobs"
    blobs = LocalBlobStore(root)
    data = sample(FLORES)
    upload = stage(db_session, account, blobs, data)
    assert upload.status == "staged" and len(parsed_blobs(root)) == 1  # parsed once, when staged
    assert blobs.get_bytes(upload.blob_key) == data
    # What the kept parse holds is exactly what reading the file gives.
    frame, report, diff, _ = uploads.preview(db_session, account, upload.id, blobs)
    direct, direct_report = read_timesheet(data, timezone=report.timezone)
    pd.testing.assert_frame_equal(frame, direct)
    assert report.as_dict() == {**direct_report.as_dict(), "timezone_why": report.timezone_why,
                                "zones": report.zones}
    # Without the file, the preview and the confirm still work: they never parse it again.
    blobs.delete(upload.blob_key)
    frame, report, diff, _ = uploads.preview(db_session, account, upload.id, blobs)
    assert (report.entries, diff["new_count"]) == (217, 217)
    with transaction(db_session):
        result = uploads.import_staged(db_session, account, upload.id, blobs)
    assert result.new == 217 and db_session.scalar(select(func.count(TimeEntry.id))) == 217
    assert len(parsed_blobs(root)) == 1


def test_a_changed_option_is_kept_on_the_row_and_parsed_once(db_session, account, tmp_path):
    root = tmp_path / "blobs"
    blobs = LocalBlobStore(root)
    upload = stage(db_session, account, blobs, sample(FLORES), date_order="dmy")
    assert db_session.get(Upload, upload.id).options == {"date_order": "dmy"}
    with transaction(db_session):
        uploads.set_options(db_session, account, upload.id, blobs, {"timezone": "America/New_York"})
    db_session.expire_all()
    kept = db_session.get(Upload, upload.id)
    assert kept.options == {"date_order": "dmy", "timezone": "America/New_York"}
    assert len(parsed_blobs(root)) == 2  # the new zone's reading, once
    blobs.delete(kept.blob_key)
    _, report, _, options = uploads.preview(db_session, account, upload.id, blobs)
    assert report.timezone == "America/New_York" and options.timezone == "America/New_York"
    # A reading nobody chose before needs the file, which is gone: proof the others were not parsed again.
    with pytest.raises(NotFound):
        uploads.preview(db_session, account, upload.id, blobs, {"timezone": "Asia/Tokyo"})
    with transaction(db_session):
        result = uploads.import_staged(db_session, account, upload.id, blobs)
    assert result.new == 217
    stored = db_session.get(Upload, upload.id)
    assert stored.options["timezone"] == "America/New_York" and stored.options["date_order"] == "dmy"
    first = db_session.scalars(select(TimeEntry).order_by(TimeEntry.source_line)).first()
    assert first.timezone == "America/New_York"


def test_the_history_lists_uploads_without_loading_their_diffs(db_session, account, tmp_path):
    blobs = LocalBlobStore(tmp_path)
    upload = stage(db_session, account, blobs, sample(FLORES))
    with transaction(db_session):
        uploads.import_staged(db_session, account, upload.id, blobs)
    db_session.expire_all()
    [listed] = uploads.list_uploads(db_session, account)
    assert listed.new_count == 217
    assert {"diff", "skipped_rows", "warnings"} <= inspect(listed).unloaded


# --- migration 0016: the bytes of uploads stored before it move to the blob store -------------------




def _old_upload(connection, upload_id: int, content: bytes) -> None:
    """An upload row as revision 0013 wrote it: the file's bytes in ``uploads.content``."""
    when = dt.datetime(2026, 1, 2, 8, tzinfo=dt.UTC)
    params = {"id": upload_id, "blob": content, "at": when, "opts": {}, "none": []}
    types = {"at": UTCDateTime(), "opts": JSON(), "none": JSON()}
    connection.execute(text(
        "INSERT INTO uploads (id, account_id, filename, content, size_bytes, sha256, status, format, explanation, "
        "options, created_at, created_by, rows_count, new_count, unchanged_count, changed_count, missing_count, "
        "skipped_count, total_seconds, skipped_rows, warnings) VALUES (:id, 1, 'x.csv', :blob, 0, 'x', "
        "'imported', 'toggl', '', :opts, :at, 'ada', 0, 0, 0, 0, 0, 0, 0, :none, :none)")
        .bindparams(*(bindparam(k, type_=t) for k, t in types.items())), params)


def test_migration_0016_moves_stored_bytes_into_the_blob_store(empty_url, tmp_path):
    from app.migrate import upgrade

    upgrade(empty_url, "0013")
    data = sample(FLORES)
    engine = make_engine(empty_url)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO accounts (id, email, password_hash, plan, display_name, contact, "
                                "timezone, created_at, password_changed_at) VALUES (1, 'ada@example.com', '!', "
                                "'pro', 'Ada', '', 'UTC', :at, :at)").bindparams(bindparam("at", type_=UTCDateTime())),
                           {"at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
        _old_upload(connection, 1, data)
        _old_upload(connection, 2, b"")  # a live sync's upload: no file
        _old_upload(connection, 3, data)  # the same file again: kept once
    engine.dispose()
    root = tmp_path / "migrated-blobs"
    upgrade(empty_url, blobs=LocalBlobStore(root))
    engine = make_engine(empty_url)
    try:
        with engine.connect() as connection:
            assert "content" not in {c["name"] for c in inspect(connection).get_columns("uploads")}
            keys = dict(connection.execute(text("SELECT id, blob_key FROM uploads ORDER BY id")).all())
        assert keys[2] is None and keys[1] == keys[3] == uploads.csv_key(1, hashlib.sha256(data).hexdigest())
        assert LocalBlobStore(root).get_bytes(keys[1]) == data and len(stored_files(root)) == 1
        with engine.connect() as connection, pytest.raises(SQLAlchemyError):
            connection.execute(text("SELECT content FROM uploads"))
    finally:
        engine.dispose()
