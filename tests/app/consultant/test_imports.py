"""The /imports pages, ``hourtab import`` and the demo loader, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner
from sqlalchemy import func, select

from hourtab.timesheets.models import ImportProfile, TimeEntry, Upload
from tests.helpers.consultant_forms import TOGGL, upload
from tests.helpers.forms import post_form
from tests.helpers.paths import DATA

AMBIGUOUS = DATA / "timetrackers/clockify/solidtime_clockify_time_entries_import_test_1.csv"


def count(app, model) -> int:
    with app.app_context():
        from app.db import get_db

        return get_db().scalar(select(func.count(model.id)))


def test_upload_preview_confirm_detail_and_reimport(app, logged_in):
    client = logged_in
    page = client.get("/imports").get_data(as_text=True)
    assert 'type="file"' in page and "imports.js" in page and "<script>" not in page
    r = upload(client, TOGGL.read_bytes(), TOGGL.name)
    assert r.status_code == 302 and "/preview" in r.headers["Location"]
    preview_url = r.headers["Location"]
    html = client.get(preview_url).get_data(as_text=True)
    assert "Toggl Track detailed report" in html and "186.9428" in html and "Client 1" in html
    assert count(app, TimeEntry) == 0  # nothing imported before confirming
    upload_id = int(re.search(r"/imports/(\d+)/preview", preview_url).group(1))
    r = post_form(client, f"/imports/{upload_id}/confirm", {}, page=preview_url)
    assert r.status_code == 302 and r.headers["Location"].endswith(f"/imports/{upload_id}")
    detail = client.get(f"/imports/{upload_id}").get_data(as_text=True)
    assert "217 new" in detail and "sha256" in detail
    assert count(app, TimeEntry) == 217
    original = client.get(f"/imports/{upload_id}/original")
    assert original.data == TOGGL.read_bytes() and "attachment" in original.headers["Content-Disposition"]
    # the same file again: nothing new, nothing changed
    r = upload(client, TOGGL.read_bytes(), TOGGL.name)
    second = int(re.search(r"/imports/(\d+)/preview", r.headers["Location"]).group(1))
    post_form(client, f"/imports/{second}/confirm", {}, page=r.headers["Location"])
    assert "0 new · 217 unchanged · 0 changed" in client.get(f"/imports/{second}").get_data(as_text=True)
    assert count(app, TimeEntry) == 217
    history = client.get("/imports/history").get_data(as_text=True)
    assert history.count(TOGGL.name) == 2


def test_ambiguous_dates_show_both_readings_and_bad_rows_are_listed(app, logged_in):
    client = logged_in
    r = upload(client, AMBIGUOUS.read_bytes())
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "3 April 2024" in html and "4 March 2024" in html and "date_order=mdy" in html
    upload_id = int(re.search(r"/imports/(\d+)/preview", r.headers["Location"]).group(1))
    html = client.get(f"/imports/{upload_id}/preview?date_order=mdy").get_data(as_text=True)
    assert "dates MM/DD/YYYY" in html

    bad = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,"
           "Tags\nAda,a@x,C,P,,<script>alert(1)</script>,No,2024-01-02,09:00:00,2024-01-02,10:00:00,01:00:00,\n"
           "Ada,a@x,C,P,,late,No,2024-01-03,09:00:00,2024-01-03,10:00:00,-1:00:00,\n")
    r = upload(client, bad.encode())
    preview_url = r.headers["Location"]
    html = client.get(preview_url).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "the duration is negative" in html and ">3<" in html
    bad_id = int(re.search(r"/imports/(\d+)/preview", preview_url).group(1))
    r = post_form(client, f"/imports/{bad_id}/confirm", {}, page=preview_url)
    assert "/preview" in r.headers["Location"] and count(app, TimeEntry) == 0
    r = post_form(client, f"/imports/{bad_id}/confirm", {"skip_invalid": "1"}, page=preview_url)
    detail = client.get(f"/imports/{bad_id}").get_data(as_text=True)
    assert "1 new" in detail and "1 skipped" in detail and "Skipped rows" in detail
    assert count(app, TimeEntry) == 1


def test_unknown_csv_mapping_profile_size_limit_and_isolation(app, logged_in):
    client = logged_in
    r = upload(client, b"Day,Hours,What\n2024-02-01,1.5,Review\n")
    preview_url = r.headers["Location"]
    r = client.get(preview_url)
    assert r.status_code == 302 and "/mapping" in r.headers["Location"]
    mapping_url = r.headers["Location"]
    form = client.get(mapping_url).get_data(as_text=True)
    # suggested from the names and values: Day is the date, Hours a decimal duration, What the description
    assert '<option value="Hours" selected>Hours (e.g. 1.5)</option>' in form
    assert '<option value="Day" selected>' in form and '<option value="hours" selected>' in form
    assert re.search(r"<td>Hours</td><td[^>]*>1\.5</td><td>Duration</td>", form)
    r = post_form(client, mapping_url, {"m_date": "Day", "m_duration": "Hours", "m_description": "What",
                                        "duration_unit": "hours", "profile_name": "Timesheet v1"})
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "Mapped CSV" in html and "1.5" in html
    assert count(app, ImportProfile) == 1

    app.config["CSV_MAX_BYTES"] = 64
    r = upload(client, TOGGL.read_bytes())
    assert r.status_code == 413 and "HOURTAB_CSV_MAX_MB" in r.get_data(as_text=True)
    app.config["CSV_MAX_BYTES"] = 50 * 1024 * 1024

    upload_id = int(re.search(r"/imports/(\d+)/", preview_url).group(1))
    other = app.test_client()
    from tests.helpers.forms import signup

    signup(other, email="other@example.com")
    assert other.get(f"/imports/{upload_id}").status_code == 404
    assert other.get(f"/imports/{upload_id}/original").status_code == 404


def test_cli_import_json_idempotent_dry_run_and_ambiguous(app, database_url, tmp_path, monkeypatch):
    from app.cli import cli

    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    r = runner.invoke(cli, ["user", "create", "cli@example.com", "--password-stdin"], input="a long password\n")
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["import", str(TOGGL), "--account", "cli@example.com", "--dry-run", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["new"] == 217
    assert count(app, TimeEntry) == 0
    r = runner.invoke(cli, ["retainer", "create", "--account", "cli@example.com", "--name", "R", "--client", "C",
                            "--hours", "10", "--json"])
    retainer_id = json.loads(r.stdout)["id"]
    r = runner.invoke(cli, ["import", str(TOGGL), "--account", "cli@example.com", "--json", "--retainer",
                            str(retainer_id)])
    out = json.loads(r.stdout)
    assert (out["new"], out["unchanged"], out["total_seconds"]) == (217, 0, 672994)
    r = runner.invoke(cli, ["import", str(TOGGL), "--account", "cli@example.com", "--json"])
    out = json.loads(r.stdout)
    assert (out["new"], out["changed"], out["unchanged"]) == (0, 0, 217)
    lines = TOGGL.read_text().splitlines(keepends=True)
    client_two = [line for line in lines[1:] if ",Client 2," in line]
    edited = tmp_path / "client2.csv"
    edited.write_text("".join([lines[0], *client_two[1:]]).replace("Misc updates", "Misc updates (v2)", 1))
    r = runner.invoke(cli, ["import", str(edited), "--account", "cli@example.com", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "description: Misc updates → Misc updates (v2)" in r.output
    assert re.search(r"not in the export  2017-08-01 Client 2 / Project \w+ · .+ · \d+:\d\d:\d\d", r.output)
    assert "1 entry (" in r.output and "client Client 2" in r.output and "Client 1 /" not in r.output
    r = runner.invoke(cli, ["import", str(AMBIGUOUS), "--account", "cli@example.com"])
    assert r.exit_code == 2 and "--date-order" in r.output
    r = runner.invoke(cli, ["import", str(AMBIGUOUS), "--account", "cli@example.com", "--date-order", "mdy"])
    assert r.exit_code == 0 and "2 new" in r.output
    r = runner.invoke(cli, ["import", str(TOGGL), "--account", "nobody@example.com"])
    assert r.exit_code == 2
    with app.app_context():
        from app.db import get_db

        assert get_db().scalar(select(Upload.retainer_id).where(Upload.retainer_id.is_not(None))) == retainer_id


def test_demo_loader_imports_real_samples_once(app):
    from app.demo import DEMO_FILES, load_demo
    from app.extensions import blobs

    with app.app_context():
        from app.db import get_db

        names = [name for name, *_ in DEMO_FILES]
        from_samples = (select(func.count(TimeEntry.id)).join(Upload, TimeEntry.upload_id == Upload.id)
                        .where(Upload.filename.in_(names)))
        session = get_db()
        load_demo(session, blobs())
        first = session.scalar(select(func.count(TimeEntry.id)))
        load_demo(session, blobs())
        # Other features' demo loaders add their own entries; a second run adds nothing anywhere.
        assert session.scalar(select(func.count(TimeEntry.id))) == first
        assert session.scalar(from_samples) == 217 + 99
        assert session.scalar(select(func.count(Upload.id)).where(Upload.filename.in_(names))) == 2


def test_empty_file_is_refused_inside_the_upload_form(app, logged_in):
    r = upload(logged_in, b"", "empty.csv")
    html = r.get_data(as_text=True)
    assert r.status_code == 400 and 'id="upload-error"' in html and "The file is empty." in html
    assert 'id="upload-form"' in html  # the form is still there to try again
    assert count(app, Upload) == 0


def test_options_are_kept_on_the_upload_and_an_oversized_file_leaves_nothing(app, logged_in):
    from pathlib import Path

    client = logged_in
    r = upload(client, TOGGL.read_bytes(), TOGGL.name, timezone="Europe/Berlin")
    preview_url = r.headers["Location"]
    assert "?" not in preview_url  # the options are on the row, not in the address
    upload_id = int(re.search(r"/imports/(\d+)/preview", preview_url).group(1))
    assert "Europe/Berlin" in client.get(preview_url).get_data(as_text=True)
    r = post_form(client, f"/imports/{upload_id}/options", {"timezone": "America/New_York"}, page=preview_url)
    assert r.status_code == 302 and r.headers["Location"].endswith(f"/imports/{upload_id}/preview")
    assert 'id="upload-timezone">America/New_York<' in client.get(preview_url).get_data(as_text=True)
    with app.app_context():
        from app.db import get_db

        assert get_db().get(Upload, upload_id).options == {"timezone": "America/New_York"}
    post_form(client, f"/imports/{upload_id}/confirm", {}, page=preview_url)  # nothing sent: the kept options
    with app.app_context():
        from app.db import get_db

        zones = set(get_db().scalars(select(TimeEntry.timezone).where(TimeEntry.upload_id == upload_id)))
    assert zones == {"America/New_York"}

    blobs = Path(app.config["DATA_DIR"]) / "blobs"
    before = sorted(p for p in blobs.rglob("*") if p.is_file())
    app.config["CSV_MAX_BYTES"] = 1024
    r = upload(client, TOGGL.read_bytes() * 3, "big.csv")
    app.config["CSV_MAX_BYTES"] = 50 * 1024 * 1024
    assert r.status_code == 413 and "larger than" in r.get_data(as_text=True)
    assert sorted(p for p in blobs.rglob("*") if p.is_file()) == before
    assert count(app, Upload) == 1
