"""A CSV upload above ``HOURTAB_CSV_QUEUE_ABOVE_KB`` (issue 22.4): the request only stages the file; a
queued job reads it and another imports it, each with its progress on the job page; the entries are
those the CLI import of the same file writes. On SQLite and PostgreSQL, with a real queue and consumer.
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from hourtab.core.accounts import find_account
from hourtab.imports.classify import COMPARED
from hourtab.timesheets.models import TimeEntry, Upload
from tests.helpers.consultant_forms import TOGGL, upload
from tests.helpers.forms import post_form, signup
from tests.helpers.paths import DATA
from tests.helpers.waiting import wait_until

SMALL = DATA / "timetrackers/toggl/solidtime_toggl_time_entries_import_test_1.csv"


@pytest.fixture
def queued(make_app):
    return make_app(QUEUE_IMMEDIATE=False, HOURTAB_CSV_QUEUE_ABOVE_KB="8")


@pytest.fixture
def consumer(queued):
    """A worker thread consuming the app's queue, as ``hourtab serve`` runs one."""
    def start():
        worker = queued.extensions["hourtab.queue"].huey.create_consumer(
            workers=1, worker_type="thread", periodic=False, initial_delay=0.05, max_delay=0.2)
        worker.start()
        started.append(worker)

    started: list = []
    yield start
    for worker in started:
        worker.stop(graceful=True)


def _entries(app, email: str) -> list[tuple]:
    with app.app_context():
        from app.db import get_db

        db = get_db()
        account = find_account(db, email)
        rows = db.execute(select(*(getattr(TimeEntry, c) for c in COMPARED))
                          .where(TimeEntry.account_id == account.id, TimeEntry.status == "active")).all()
        return sorted(tuple(r) for r in rows)


def _job(client, job_url: str, until: str | None = None) -> dict:
    if until is None:
        return client.get(f"{job_url}.json").get_json()
    return wait_until(lambda: (s := client.get(f"{job_url}.json").get_json())["status"] == until and s, 120,
                      f"{job_url} to be {until}")


def test_a_large_web_upload_is_read_and_imported_by_jobs_with_progress(queued, consumer, database_url, tmp_path,
                                                                          monkeypatch):
    assert TOGGL.stat().st_size > 8 * 1024
    client = queued.test_client()
    signup(client, email="web@example.com")
    r = upload(client, TOGGL.read_bytes(), TOGGL.name)
    job_url = r.headers["Location"]
    assert r.status_code == 302 and re.fullmatch(r"/jobs/[0-9a-f]{32}", job_url)
    # The request only staged the file: no worker runs yet, the job waits, nothing was read or imported.
    waiting = _job(client, job_url)
    assert (waiting["status"], waiting["title"]) == ("queued", "Reading the export")
    page = client.get(job_url).get_data(as_text=True)
    assert 'id="job-bar"' in page and "Waiting for a worker" in page and TOGGL.name in page
    with queued.app_context():
        from app.db import get_db

        staged = get_db().scalar(select(Upload))
        upload_id = staged.id
        assert staged.status == "reading" and not staged.format
    preview_url = f"/imports/{upload_id}/preview"
    reading = client.get(preview_url).get_data(as_text=True)
    assert "reads it in the background" in reading and job_url in reading
    assert _entries(queued, "web@example.com") == []

    consumer()
    read = _job(client, job_url, until="done")
    assert read["result_url"] == preview_url
    assert (read["phase"], read["done"], read["total"]) == ("Reading the export", TOGGL.stat().st_size,
                                                           TOGGL.stat().st_size)
    preview = client.get(preview_url).get_data(as_text=True)
    assert "Import 217 entries" in preview and "186.9428" in preview

    r = post_form(client, f"/imports/{upload_id}/confirm", {}, page=preview_url)
    confirm_url = r.headers["Location"]
    assert r.status_code == 302 and re.fullmatch(r"/jobs/[0-9a-f]{32}", confirm_url)
    imported = _job(client, confirm_url, until="done")
    assert imported["title"] == "Importing the export" and imported["result_url"] == f"/imports/{upload_id}"
    assert (imported["phase"], imported["done"], imported["total"]) == ("Writing entries", 217, 217)
    assert client.get(confirm_url).headers["Location"] == f"/imports/{upload_id}"
    assert "217 new" in client.get(f"/imports/{upload_id}").get_data(as_text=True)

    from app.cli import cli

    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    assert runner.invoke(cli, ["user", "create", "cli@example.com", "--password-stdin"],
                         input="a long password\n").exit_code == 0
    assert runner.invoke(cli, ["import", str(TOGGL), "--account", "cli@example.com"]).exit_code == 0
    web = _entries(queued, "web@example.com")
    assert len(web) == 217 and web == _entries(queued, "cli@example.com")


def test_a_small_upload_is_previewed_within_the_request(queued):
    client = queued.test_client()
    signup(client)
    r = upload(client, SMALL.read_bytes(), SMALL.name)
    assert r.status_code == 302 and r.headers["Location"].endswith("/preview")
    assert "Import 2 entries" in client.get(r.headers["Location"]).get_data(as_text=True)


def test_bad_rows_of_a_large_file_ask_first_and_the_job_keeps_the_valid_ones(queued, consumer):
    client = queued.test_client()
    signup(client)
    lines = TOGGL.read_text().splitlines(keepends=True)
    broken = re.sub(r",\d\d:\d\d:\d\d,(\d\d:\d\d:\d\d,)", r",25:99:00,\1", lines[5], count=1)
    assert broken != lines[5]
    r = upload(client, "".join([*lines[:5], broken, *lines[6:]]).encode(), "broken.csv")
    consumer()
    read = _job(client, r.headers["Location"], until="done")
    preview_url = read["result_url"]
    assert "Import the 216 valid rows" in client.get(preview_url).get_data(as_text=True)
    upload_id = int(re.search(r"/imports/(\d+)/preview", preview_url).group(1))
    r = post_form(client, f"/imports/{upload_id}/confirm", {}, page=preview_url)
    assert r.headers["Location"] == preview_url          # asked first, nothing queued
    r = post_form(client, f"/imports/{upload_id}/confirm", {"skip_invalid": "1"}, page=preview_url)
    done = _job(client, r.headers["Location"], until="done")
    assert done["result_url"] == f"/imports/{upload_id}"
    assert "216 new" in client.get(f"/imports/{upload_id}").get_data(as_text=True)
