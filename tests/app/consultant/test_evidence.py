"""The evidence pages: upload a real run archive, list, detail; names are escaped; refusals store nothing."""

from __future__ import annotations

import io
import zipfile

import pytest
from sqlalchemy import func, select

from incidents.evidence.models import Evidence
from tests.helpers.evidence_uploads import upload, zip_bytes


def _count(app) -> int:
    with app.app_context():
        from app.db import get_db

        return get_db().scalar(select(func.count(Evidence.id)))


@pytest.mark.torch
def test_upload_list_and_detail_escape_names(app, logged_in, wandb_runs):
    run = wandb_runs["plain <script>alert(1)</script>"]
    r = upload(logged_in, "run <b>1</b>.zip", zip_bytes(run["dir"]))
    assert r.status_code == 302, r.get_data(as_text=True)
    assert r.headers["Location"].startswith("/jobs/")               # parsed off the request, by the queue
    detail = logged_in.get(r.headers["Location"], follow_redirects=True).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in detail
    assert "plain &lt;script&gt;alert(1)&lt;/script&gt;" in detail
    assert "&lt;img src=x onerror=alert(1)&gt;" in detail and "<img src=x" not in detail
    assert "&lt;b&gt;tag&lt;/b&gt;" in detail and 'aria-labelledby="series-0" class="series"' in detail
    listing = logged_in.get("/evidence").get_data(as_text=True)
    assert "plain &lt;script&gt;" in listing and "run &lt;b&gt;1&lt;/b&gt;.zip" in listing
    assert "<script>alert" not in listing
    assert _count(app) == 1
    again = upload(logged_in, "again.zip", zip_bytes(run["dir"]))       # same bytes: nothing new
    assert again.status_code == 302 and _count(app) == 1


def test_hostile_archive_is_refused_and_nothing_stored(app, logged_in, tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("../../etc/cron.d/x", "boom")
    # The test queue runs jobs inline, so a refused upload is answered in the form like any bad input.
    r = upload(logged_in, "evil.zip", buffer.getvalue())
    assert r.status_code == 400 and "outside the archive" in r.get_data(as_text=True)
    r = upload(logged_in, "sheet.csv", b"Date,Hours\n2024-01-01,3\n")
    assert r.status_code == 400 and "not a W&amp;B export" in r.get_data(as_text=True)
    r = upload(logged_in, "notes.txt", b"hello")                          # refused before queueing
    assert r.status_code == 400 and "is not a file HourTab reads" in r.get_data(as_text=True)
    assert _count(app) == 0


@pytest.mark.torch
def test_evidence_pages_need_login_and_ownership(app, logged_in, wandb_runs):
    r = upload(logged_in, "w.zip", zip_bytes(wandb_runs["watched"]["dir"]))
    url = logged_in.get(r.headers["Location"]).headers["Location"]         # the job → the stored run
    other = app.test_client()
    from tests.helpers.forms import signup

    assert other.get(url).status_code == 302                  # not logged in → login page
    signup(other, email="someone@example.com")
    assert other.get(url).status_code == 404
