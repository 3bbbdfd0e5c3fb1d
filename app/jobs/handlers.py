"""What each kind of job does, as ``handler(session, job) -> result``; run by ``hourtab.core.jobs.JobRunner``.

Handlers are written to be run twice: a retried ingest finds the run stored by the first attempt
(evidence is keyed by the upload's sha256), a retried render overwrites the same cache entry, and
alert e-mails are keyed per (retainer, alert, period) in the database.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy.orm import Session

from hourtab.core import progress
from hourtab.core.blobs import BlobStore
from hourtab.core.db import transaction
from hourtab.core.errors import InvalidInput
from hourtab.core.jobs import Job

Handler = Callable[[Session, Job], dict[str, Any]]

#: What the job page calls each kind of job.
TITLES = {"csv_import": "Importing the export", "demo_setup": "Loading the demo data", "evidence_ingest": "Storing the run", "incident_pdf": "Rendering the incident PDF",
          "incident_publish": "Preparing the published writeup", "alerts_check": "Checking hour alerts",
          "alert_send": "Sending an alert", "alert_confirm": "Sending a confirmation e-mail",
          "sync_run": "Syncing from the tracker"}


def make_handlers(app: Flask) -> dict[str, Handler]:
    from app.jobs import alerts, sync

    blobs: BlobStore = app.extensions["hourtab.blobs"]

    def ingest(session: Session, job: Job) -> dict[str, Any]:
        return ingest_evidence(session, job, blobs, app.config["ARCHIVE_MAX_BYTES"])

    def incident_pdf(session: Session, job: Job) -> dict[str, Any]:
        return render_incident(session, job, blobs, ("pdf",))

    def incident_publish(session: Session, job: Job) -> dict[str, Any]:
        kinds = ("pdf", "html") if job.params.get("public_url") else ("pdf",)
        result = render_incident(session, job, blobs, kinds)
        alerts.incident_alert(app, session, job)
        return result

    def csv_import(session: Session, job: Job) -> dict[str, Any]:
        result = import_timesheet(session, job, blobs, app.config["CSV_MAX_BYTES"])
        alerts.queue_alert_check(app, session, job.account_id)
        return result

    def demo_setup(session: Session, job: Job) -> dict[str, Any]:
        from app.demo import run_loaders
        from hourtab.core.accounts import Account

        run_loaders(session, session.get(Account, job.account_id), blobs)
        return {}

    return {"csv_import": csv_import, "demo_setup": demo_setup, "evidence_ingest": ingest, "incident_pdf": incident_pdf, "incident_publish": incident_publish,
            "alerts_check": lambda s, j: alerts.check_alerts(app, s, j),
            "alert_send": lambda s, j: alerts.send_alert(app, s, j),
            "alert_confirm": lambda s, j: alerts.send_confirmation(app, s, j),
            "sync_run": lambda s, j: sync.run_sync(app, s, j)}


def ingest_evidence(session: Session, job: Job, blobs: BlobStore, max_archive_bytes: int) -> dict[str, Any]:
    """Fetch the stored upload, parse it (reporting bytes read) and store its runs once."""
    from incidents.evidence import store

    p = job.params
    with tempfile.TemporaryDirectory(prefix="hourtab-job-") as tmp:
        path = Path(tmp) / f"upload{store.upload_suffix(p['filename'])}"
        progress.report("Fetching the upload", 0, p["size"])
        blobs.get_file(p["key"], path)
        progress.report("Fetching the upload", p["size"], p["size"])
        try:
            rows = store.ingest_upload(session, job.account_id, path, p["filename"], blobs,
                                       max_archive_bytes=max_archive_bytes)
        except InvalidInput:
            # Refused input fails the same way on every retry: keep nothing of it.
            blobs.delete(p["key"])
            raise
        ids = [r.id for r in rows]
        session.commit()   # progress is written from another connection: never report inside this write
    return {"evidence_ids": ids}


def import_timesheet(session: Session, job: Job, blobs: BlobStore, max_bytes: int) -> dict[str, Any]:
    """Import a time-tracker export kept in blob storage; a retried job finds its own upload."""
    from sqlalchemy import select

    from hourtab.core.accounts import Account
    from hourtab.timesheets.importer import import_file
    from hourtab.timesheets.models import Upload

    marker = f"job:{job.id}"
    done = session.scalar(select(Upload.id).where(Upload.account_id == job.account_id,
                                                  Upload.created_by == marker))
    if done is not None:
        return {"upload_id": done}
    data = blobs.get_bytes(job.params["key"])
    account = session.get(Account, job.account_id)
    with transaction(session):
        result = import_file(session, account, data, job.params["filename"], created_by=marker, max_bytes=max_bytes,
                             retainer_id=job.params.get("retainer_id"))
    return {"upload_id": result.upload_id, "counts": result.counts()}


def render_incident(session: Session, job: Job, blobs: BlobStore, kinds: tuple[str, ...]) -> dict[str, Any]:
    """Render the writeup into the blob cache, so the page's download is a single blob read."""
    from hourtab.core.accounts import Account
    from hourtab.core.pdf import render_pdf
    from incidents.writeups import service
    from incidents.writeups.report.build import build_report
    from incidents.writeups.report.html import render_html
    from incidents.writeups.report.pdf import BlobCache, cache_key, cached_pdf, pdf_html

    incident = service.get_incident(session, job.account_id, job.params["incident_id"])
    author = session.get(Account, job.account_id).display_name
    key = cache_key(service.report_input(session, incident, blobs, author, with_runs=False))
    steps = len(kinds) + 1
    progress.report("Loading the evidence", 0, steps)
    report = build_report(service.report_input(session, incident, blobs, author))
    session.rollback()   # reads done: hold no transaction while rendering
    for i, kind in enumerate(kinds, start=1):
        progress.report("Rendering the PDF" if kind == "pdf" else "Rendering the page", i, steps)
        if kind == "pdf":
            cached_pdf(key, BlobCache(blobs, "pdf"), lambda: render_pdf(pdf_html(report)))
        else:
            token_url = job.params.get("public_url", "")
            cached_pdf(key, BlobCache(blobs, "html"),
                       lambda u=token_url: render_html(report, pdf_url=f"{u}.pdf").encode("utf-8"))
    progress.report("Done", steps, steps)
    return {"incident_id": incident.id, "cache_key": key}


def start(session: Session, account_id: int, kind: str, params: dict[str, Any]) -> Job:
    """Create the job row and commit it (the queue may run it at once, from another process)."""
    from hourtab.core.jobs import create_job

    with transaction(session):
        job = create_job(session, account_id, kind, params)
    return job
