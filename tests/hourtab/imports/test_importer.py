"""The import service on SQLite and PostgreSQL: idempotent, mergeable, audited, all-or-nothing."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest
from sqlalchemy import func, select

from hourtab.core.blobs import LocalBlobStore
from hourtab.core.db import transaction
from hourtab.imports import uploads
from hourtab.imports.importer import confirm_removal, import_file
from hourtab.timesheets.errors import AmbiguousDateOrder, RowsRejected
from hourtab.timesheets.models import ImportProfile, TimeEntry, TimeEntryChange, Upload
from hourtab.timesheets.profiles import save_profile
from tests.factories import TOGGL_HEADER, make_account, toggl_row
from tests.helpers.concurrent_imports import import_at_once
from tests.helpers.imported import snapshot
from tests.helpers.timesheet_samples import sample

FLORES = "toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_2017-08-31.csv"


def run(session, account, data: bytes, **kwargs):
    with transaction(session):
        return import_file(session, account, data, "export.csv", **kwargs)


def split_export(data: bytes, first: slice, second: slice) -> tuple[bytes, bytes]:
    lines = data.decode().splitlines(keepends=True)
    return ("".join(lines[:1] + lines[first])).encode(), ("".join(lines[:1] + lines[second])).encode()


def test_reimport_overlap_edit_missing_and_isolation(db_session, account, tmp_path):
    """One database per backend for the whole merge story (each fresh database costs seconds)."""
    check_reimport_changes_nothing_and_keeps_the_upload(db_session, account, LocalBlobStore(tmp_path))
    other = make_account(db_session, "other@example.com")
    check_overlapping_exports_add_only_the_new_rows(db_session, other)
    third = make_account(db_session, "third@example.com")
    check_edited_upstream_is_changed_with_history(db_session, third)
    fourth = make_account(db_session, "fourth@example.com")
    check_missing_upstream_is_kept_until_confirmed(db_session, fourth)


def test_refusals_write_nothing(db_session, account):
    check_bad_rows_refuse_the_whole_file_and_change_nothing(db_session, account)
    other = make_account(db_session, "other@example.com")
    check_ambiguous_dates_refuse_until_the_order_is_given(db_session, other)
    third = make_account(db_session, "third@example.com")
    check_dry_run_writes_nothing(db_session, third)
    check_import_valid_rows_keeps_skipped_rows_in_the_report(db_session, third)


def check_reimport_changes_nothing_and_keeps_the_upload(db_session, account, blobs):
    data = sample(FLORES)
    with transaction(db_session):
        first = uploads.stage_and_import(db_session, account, data, "export.csv", blobs, created_by="t")
    assert (first.new, first.unchanged, first.changed) == (217, 0, 0)
    with transaction(db_session):
        second = uploads.stage_and_import(db_session, account, io.BytesIO(data), "export.csv", blobs, created_by="t")
    assert second.counts() == {"new": 0, "unchanged": 217, "changed": 0, "missing": 0, "skipped": 0,
                               "adopted": 0}
    total = db_session.scalar(select(func.sum(TimeEntry.duration_s)).where(TimeEntry.account_id == account.id))
    assert total == first.report.total_seconds == 672994
    rows = db_session.scalars(select(Upload).where(Upload.account_id == account.id).order_by(Upload.id)).all()
    assert [u.new_count for u in rows] == [217, 0]
    assert blobs.get_bytes(rows[1].blob_key) == data and rows[1].unchanged_count == 217
    assert rows[0].blob_key == rows[1].blob_key and len(rows[1].sha256) == 64  # the same bytes, kept once
    assert rows[0].explanation.startswith("Toggl Track detailed report")


def check_overlapping_exports_add_only_the_new_rows(db_session, account):
    # January-March then March-April: rows 1-150, then rows 100-217 (same days overlap).
    early, late = split_export(sample(FLORES), slice(1, 151), slice(101, 218))
    assert run(db_session, account, early).new == 150
    result = run(db_session, account, late)
    assert (result.new, result.unchanged, result.changed) == (67, 50, 0)
    mine = TimeEntry.account_id == account.id
    assert db_session.scalar(select(func.count(TimeEntry.id)).where(mine)) == 217
    assert db_session.scalar(select(func.sum(TimeEntry.duration_s)).where(mine)) == 672994


def check_edited_upstream_is_changed_with_history(db_session, account):
    base = TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "10:00:00", "01:00:00", description="Draft")
    run(db_session, account, base.encode())
    edited = TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "10:30:00", "01:30:00", description="Final")
    result = run(db_session, account, edited.encode())
    assert (result.new, result.changed, result.unchanged) == (0, 1, 0)
    entry = db_session.scalars(select(TimeEntry).where(TimeEntry.account_id == account.id)).one()
    assert (entry.duration_s, entry.description) == (5400, "Final")
    change = db_session.scalars(select(TimeEntryChange).where(TimeEntryChange.account_id == account.id)).one()
    assert change.kind == "changed"
    assert change.old_values["duration_s"] == 3600 and change.old_values["description"] == "Draft"


def check_missing_upstream_is_kept_until_confirmed(db_session, account):
    rows = [toggl_row("2024-01-02", f"{h:02d}:00:00", f"{h:02d}:30:00", "00:30:00") for h in (9, 10, 11)]
    run(db_session, account, (TOGGL_HEADER + "".join(rows)).encode())
    result = run(db_session, account, (TOGGL_HEADER + rows[0] + rows[2]).encode())
    assert (result.missing, result.unchanged) == (1, 2)
    statuses = dict(db_session.execute(select(TimeEntry.source_line, TimeEntry.status)
                                       .where(TimeEntry.account_id == account.id)).all())
    assert sorted(statuses.values()) == ["active", "active", "missing_upstream"]
    # a file for another day does not touch it
    other = run(db_session, account, (TOGGL_HEADER + toggl_row("2024-01-05", "09:00:00", "10:00:00",
                                                              "01:00:00")).encode())
    assert other.missing == 0
    with transaction(db_session):
        assert confirm_removal(db_session, account, upload_id=result.upload_id) == 1
    assert db_session.scalar(select(func.count()).where(TimeEntry.status == "removed",
                                                        TimeEntry.account_id == account.id)) == 1


def check_bad_rows_refuse_the_whole_file_and_change_nothing(db_session, account):
    run(db_session, account, sample(FLORES))
    before = snapshot(db_session)
    bad = TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "10:00:00", "01:00:00") + \
        toggl_row("2024-01-03", "09:00:00", "10:00:00", "-1:00:00")
    with pytest.raises(RowsRejected) as info:
        run(db_session, account, bad.encode())
    assert info.value.issues[0].line == 3 and info.value.issues[0].column == "Duration"
    assert snapshot(db_session) == before


def check_import_valid_rows_keeps_skipped_rows_in_the_report(db_session, account):
    bad = TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "10:00:00", "01:00:00") + \
        toggl_row("2024-01-03", "09:00:00", "10:00:00", "-1:00:00")
    result = run(db_session, account, bad.encode(), skip_invalid=True)
    assert (result.new, result.skipped) == (1, 1)
    upload = db_session.get(Upload, result.upload_id)
    assert upload.skipped_rows[0]["line"] == 3 and upload.skipped_rows[0]["column"] == "Duration"


def check_ambiguous_dates_refuse_until_the_order_is_given(db_session, account):
    data = sample("clockify/solidtime_clockify_time_entries_import_test_1.csv")
    before = snapshot(db_session)
    with pytest.raises(AmbiguousDateOrder):
        run(db_session, account, data)
    assert snapshot(db_session) == before
    assert run(db_session, account, data, date_order="mdy").new == 2


def check_dry_run_writes_nothing(db_session, account):
    before = snapshot(db_session)
    result = run(db_session, account, sample(FLORES), dry_run=True)
    assert result.new == 217 and result.upload_id is None
    assert snapshot(db_session) == before


def test_saved_profile_maps_an_unknown_csv(db_session, account):
    with transaction(db_session):
        save_profile(db_session, account, "my sheet", {"date": "Day", "duration": "Hours", "description": "What"},
                     duration_unit="hours")
    result = run(db_session, account, b"Day,Hours,What\n2024-02-01,1.5,Review\n", profile="my sheet")
    assert result.new == 1 and result.report.format == "mapped"
    assert db_session.scalars(select(TimeEntry.duration_s)).one() == 5400
    assert db_session.scalar(select(func.count(ImportProfile.id))) == 1


def test_concurrent_overlapping_imports_create_no_duplicates(database_url, db_session, account):
    early, late = split_export(sample(FLORES), slice(1, 151), slice(101, 218))
    outcomes = import_at_once(database_url, account, [early, late])
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    assert db_session.scalar(select(func.count(TimeEntry.id))) == 217
    assert db_session.scalar(select(func.count(func.distinct(TimeEntry.fingerprint)))) == 217
    assert sum(o.new for o in outcomes) == 217


def test_stored_entries_equal_the_parsed_rows_exactly(db_session, account):
    """The bulk writer (executemany on SQLite, COPY on PostgreSQL) must store every value as parsed:
    texts with tabs, newlines, backslashes and COPY's own null marker, missing billable flags, times."""
    from hourtab.timesheets import read_timesheet

    rows = [["Ada", "tab\there", "Yes", "2024-03-01", "09:00:00", "2024-03-01", "10:30:00", "01:30:00", "a, b"],
            ["Ada", "two\nlines, \\N and C:\\path\\t", "", "2024-03-01", "23:30:00", "2024-03-02", "00:15:00",
             "00:45:00", ""],
            ["Ada", "Zürich ✓ \\\\ .", "No", "2024-03-02", "08:00:00", "2024-03-02", "08:00:01", "00:00:01", "x"]]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for u, d, b, sd, st, ed, et, du, t in rows:
        writer.writerow([u, "a@example.com", "Cl\\ient", "Pro\tject", "", d, b, sd, st, ed, et, du, t, ""])
    lines = [TOGGL_HEADER, out.getvalue()]
    data = "".join(lines).encode()
    frame, _ = read_timesheet(data, timezone="Europe/Berlin")
    assert run(db_session, account, data, timezone="Europe/Berlin").new == 3
    stored = db_session.scalars(select(TimeEntry).order_by(TimeEntry.id)).all()
    assert [e.source_line for e in stored] == frame["line"].tolist()
    for entry, (_, row) in zip(stored, frame.iterrows(), strict=True):
        for col in ("fingerprint", "timezone", "client", "project", "task", "description", "tags", "user_name",
                    "source_format", "duration_s"):
            assert getattr(entry, col) == row[col], col
        assert entry.start_at == row["start_at"].to_pydatetime() and entry.end_at == row["end_at"].to_pydatetime()
        assert entry.local_date == row["local_date"].date()
        assert entry.billable == (None if row["billable"] is pd.NA else bool(row["billable"]))
        assert entry.status == "active" and entry.updated_at.tzinfo is not None
    assert stored[1].description.startswith("two\nlines, \\N") and stored[0].billable is True
    assert stored[1].billable is None and stored[2].billable is False
    assert run(db_session, account, data, timezone="Europe/Berlin").unchanged == 3
