"""Removal candidates only inside what an export covers; per-row removal with its hours; undo; the diff."""

from __future__ import annotations

import csv
import io

from sqlalchemy import select

from hourtab.core.blobs import LocalBlobStore
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.imports.removal import confirm_removal, removal_candidates, removed_entries, restore_removed
from hourtab.imports.uploads import import_staged, preview, stage_csv
from hourtab.timesheets.models import TimeEntry, Upload
from tests.helpers.paths import DATA

FLORES = (DATA / "toggl_floresfdev_2017-08.csv").read_bytes()  # 168 entries of Client 1, 49 of Client 2


def rows_of(data: bytes, keep) -> bytes:
    """The export with only the rows ``keep(row)`` accepts, as the tracker would write it filtered."""
    reader = csv.DictReader(io.StringIO(data.decode("utf-8-sig")))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=reader.fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(r for r in reader if keep(r))
    return out.getvalue().encode()


def run(session, account, data: bytes):
    with transaction(session):
        return import_file(session, account, data, "export.csv")


def statuses(session, client: str) -> list[str]:
    return sorted(set(session.scalars(select(TimeEntry.status).where(TimeEntry.client == client))))


def test_per_client_export_proposes_no_removals_for_other_clients(db_session, account):
    assert run(db_session, account, FLORES).new == 217
    client_one = rows_of(FLORES, lambda r: r["Client"] == "Client 1")
    complete = run(db_session, account, client_one)
    assert (complete.unchanged, complete.missing) == (168, 0)
    assert statuses(db_session, "Client 2") == ["active"]

    dropped = []
    one_less = rows_of(FLORES, lambda r: r["Client"] == "Client 1" and not (
        r["Description"] == "Call with Client" and not dropped and not dropped.append(r)))
    result = run(db_session, account, one_less)
    assert result.missing == 1
    flagged = db_session.scalars(select(TimeEntry).where(TimeEntry.status == "missing_upstream")).all()
    assert [(e.client, e.description) for e in flagged] == [("Client 1", "Call with Client")]
    assert statuses(db_session, "Client 2") == ["active"]


def test_export_of_another_project_or_user_proposes_nothing(db_session, account):
    run(db_session, account, FLORES)
    project_a = rows_of(FLORES, lambda r: r["Project"] == "Project A")
    assert run(db_session, account, project_a).missing == 0
    other_user = FLORES.decode().replace("Fernando Flores", "Someone Else").encode()
    assert run(db_session, account, rows_of(other_user, lambda r: r["Client"] == "Client 2")).missing == 0
    assert statuses(db_session, "Client 1") == ["active"]


def test_removal_per_row_states_hours_and_can_be_undone(db_session, account):
    run(db_session, account, FLORES)
    without_two = rows_of(FLORES, lambda r: r["Client"] == "Client 2" and r["Start time"] not in ("08:40:43",
                                                                                                  "08:52:28"))
    result = run(db_session, account, without_two)
    flagged = removal_candidates(db_session, account, result.upload_id)
    assert len(flagged.entries) == result.missing >= 1
    first = flagged.entries[0]
    chosen = removal_candidates(db_session, account, result.upload_id, [first.id])
    assert chosen.seconds == first.duration_s
    assert chosen.hours_text == f"{first.duration_s // 3600}:{first.duration_s % 3600 // 60:02d}"
    with transaction(db_session):
        assert confirm_removal(db_session, account, result.upload_id, [first.id]) == 1
    assert db_session.get(TimeEntry, first.id).status == "removed"
    assert [e.id for e in removed_entries(db_session, account, result.upload_id).entries] == [first.id]
    with transaction(db_session):
        assert restore_removed(db_session, account, result.upload_id) == 1
    assert db_session.get(TimeEntry, first.id).status == "missing_upstream"
    assert removed_entries(db_session, account, result.upload_id).entries == []


def test_preview_lists_new_changed_and_removal_rows_and_the_import_keeps_it(db_session, account, tmp_path):
    run(db_session, account, FLORES)
    edited = FLORES.decode().replace("Recurring activity 201708", "Recurring activity (renamed)", 1)
    edited = rows_of(edited.encode(), lambda r: r["Client"] == "Client 1" and r["Description"] != "Call with Client")
    edited += b"Fernando Flores,floresf@floresfdev.github.io,Client 1,Project A,,Brand new,No,2017-08-31,10:00:00," \
              b"2017-08-31,10:30:00,00:30:00,,\n"
    blobs = LocalBlobStore(tmp_path)
    with transaction(db_session):
        staged = stage_csv(db_session, account, io.BytesIO(edited), "edited.csv", blobs, created_by="t")
    _, report, diff, _ = preview(db_session, account, staged.id, blobs)
    assert diff["new_count"] == 1 and diff["new"][0]["description"] == "Brand new"
    assert diff["changed_count"] == 1
    [change] = diff["changed"][0]["changes"]
    assert change == {"field": "description", "old": "Recurring activity 201708", "new": "Recurring activity (renamed)"}
    removal = diff["removal"]
    assert diff["removal_count"] == len(removal) >= 1
    assert {r["client"] for r in removal} == {"Client 1"} and {r["description"] for r in removal} == {"Call with Client"}
    assert "client Client 1" in diff["scope"]
    with transaction(db_session):
        import_staged(db_session, account, staged.id, blobs)
    kept = db_session.get(Upload, staged.id).diff
    assert kept["changed"] == diff["changed"] and kept["removal_count"] == diff["removal_count"]
