"""/jobs/<id>: a queued job's progress (a bar polled as JSON), its error, a retry button, its result."""

from __future__ import annotations

from flask import jsonify, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.jobs import enqueue, title
from hourtab.core.db import transaction
from hourtab.core.jobs import Job, get_job, retry_job


def result_url(job: Job) -> str | None:
    """Where a finished job's result is shown."""
    if job.status != "done":
        return None
    if job.kind == "evidence_ingest":
        ids = job.result.get("evidence_ids", [])
        if len(ids) == 1:
            return url_for("consultant.evidence_detail", evidence_id=ids[0])
        return url_for("consultant.evidence_list")
    if job.kind == "incident_pdf":
        return url_for("consultant.incident_pdf", incident_id=job.params["incident_id"])
    if job.kind == "demo_setup":
        return url_for("consultant.dashboard")
    if job.kind == "csv_read":
        return url_for("consultant.import_preview", upload_id=job.params["upload_id"])
    if job.kind in ("csv_import", "csv_confirm") and job.result.get("upload_id"):
        return url_for("consultant.import_detail", upload_id=job.result["upload_id"])
    if job.kind == "sync_run":
        return url_for("consultant.connections")
    if job.kind == "incident_publish":
        return url_for("consultant.incident_edit", incident_id=job.params["incident_id"])
    return None


def _status(job: Job) -> dict:
    return {**job.as_dict(), "title": title(job.kind), "result_url": result_url(job)}


@bp.route("/jobs/<job_id>")
@login_required
def job_detail(job_id: str) -> ResponseReturnValue:
    job = get_job(get_db(), account().id, job_id)
    url = result_url(job)
    if url and job.kind != "incident_pdf":
        return redirect(url)
    return render_template("consultant/jobs/detail.html", job=job, status=_status(job))


@bp.route("/jobs/<job_id>.json")
@login_required
def job_status(job_id: str) -> ResponseReturnValue:
    response = jsonify(_status(get_job(get_db(), account().id, job_id)))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.route("/jobs/<job_id>/retry", methods=["POST"])
@login_required
def job_retry(job_id: str) -> ResponseReturnValue:
    db = get_db()
    with transaction(db):
        job = retry_job(db, get_job(db, account().id, job_id))
    enqueue(job.id)
    return redirect(url_for("consultant.job_detail", job_id=job.id))
