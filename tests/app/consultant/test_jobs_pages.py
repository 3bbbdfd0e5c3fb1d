"""The job pages: a PDF rendered by a job and served from its cache, status JSON, retry, ownership."""

from __future__ import annotations

import re

from tests.helpers.forms import post_form, signup


def test_incident_pdf_is_rendered_by_a_job_then_served_from_the_cache(app, logged_in, tmp_path):
    r = post_form(logged_in, "/incidents", {"title": "Slow steps"})
    edit_url = r.headers["Location"]
    incident_id = int(re.search(r"/incidents/(\d+)", edit_url).group(1))
    assert "Render the PDF" in logged_in.get(edit_url).get_data(as_text=True)
    r = post_form(logged_in, f"/incidents/{incident_id}/render", {}, page=edit_url)
    job_url = r.headers["Location"]
    assert re.fullmatch(r"/jobs/[0-9a-f]{32}", job_url)
    status = logged_in.get(f"{job_url}.json").get_json()
    assert status["status"] == "done" and status["percent"] == 100.0
    assert status["result_url"] == f"/incidents/{incident_id}.pdf"
    page = logged_in.get(job_url).get_data(as_text=True)
    assert 'id="job-bar"' in page and "jobs.js" in page and "<script>" not in page
    cached = list((tmp_path / "data" / "blobs" / "rendered" / "incidents").glob("*.pdf"))
    assert len(cached) == 1
    pdf = logged_in.get(status["result_url"]).data
    assert pdf == cached[0].read_bytes() and pdf.startswith(b"%PDF")


def test_a_failed_job_is_retried_from_its_page_and_is_private(app, logged_in):
    # A refused upload is answered in the form (and keeps nothing); a job can also fail for reasons a
    # retry may cure, here an upload whose stored bytes are missing.
    from app.db import get_db
    from app.jobs import enqueue
    from app.jobs.broker import start
    from hourtab.core.accounts import find_account

    with app.app_context():
        db = get_db()
        me = find_account(db, "consultant@example.com")
        job = start(db, me.id, "evidence_ingest", {"key": f"evidence/{me.id}/gone/upload.zip", "filename": "x.zip",
                                                    "size": 1, "sha256": "gone"})
        enqueue(job.id)
        job_url = f"/jobs/{job.id}"
    before = logged_in.get(f"{job_url}.json").get_json()
    assert before["status"] == "failed" and before["attempts"] == 1
    r = post_form(logged_in, f"{job_url}/retry", {}, page=job_url)
    assert r.status_code == 302 and r.headers["Location"] == job_url
    after = logged_in.get(f"{job_url}.json").get_json()
    assert after["status"] == "failed" and after["attempts"] == 2 and "not found" in after["error"]
    other = app.test_client()
    signup(other, email="other@example.com")
    assert other.get(f"{job_url}.json").status_code == 404
    assert other.get(job_url).status_code == 404


def test_demo_set_up_runs_as_a_job(app):
    from sqlalchemy import func, select

    from app.db import get_db
    from app.demo import queue_demo
    from hourtab.core.jobs import Job
    from incidents.writeups.models import Incident

    with app.app_context():
        db = get_db()
        email, password, job_id = queue_demo(db)
        job = db.get(Job, job_id)
        db.refresh(job)
        assert (job.status, job.done, job.total, job.error) == ("done", 1, 1, "")
        assert db.scalar(select(func.count(Incident.id))) == 1
    assert email == "demo@hourtab.example" and len(password) >= 12
