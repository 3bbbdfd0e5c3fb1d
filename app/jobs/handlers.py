"""The job kinds of the two domain packages: each handler calls one domain service.

Handlers are safe to run twice, and rarely need to: the runner commits a job's writes with its
"done", so a retried job finds nothing of an attempt that did not finish. A retried ingest also
finds the run stored by an earlier attempt (evidence is keyed by the upload's sha256), and a
retried render finds the documents in the cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flask import Flask
from sqlalchemy.orm import Session

from app.jobs.broker import Queue
from hourtab.core.accounts import Account
from hourtab.core.blobs import BlobStore
from hourtab.core.jobrunner import Slots
from hourtab.core.jobs import Job, create_job
from hourtab.imports.uploads import import_staged, read_staged, stage_and_import
from incidents.evidence import store
from incidents.writeups import published

if TYPE_CHECKING:
    from hourtab.imports.importer import ImportResult



def register(app: Flask, queue: Queue) -> None:
    blobs: BlobStore = app.extensions["hourtab.blobs"]
    cfg = app.config
    # A large run's ingest or a long report's render holds its whole working set; the worker's other
    # threads (mostly syncs waiting on trackers) must not multiply it.
    heavy = Slots(cfg["WORKER_HEAVY_JOBS"])

    def evidence_ingest(session: Session, job: Job) -> dict[str, Any]:
        p = job.params
        with heavy.held():
            rows = store.ingest_stored_upload(session, job.account_id, blobs, p["key"], p["filename"], p["size"],
                                              max_archive_bytes=cfg["ARCHIVE_MAX_BYTES"],
                                              max_members=cfg["ARCHIVE_MAX_MEMBERS"], sha256=p.get("sha256"))
        return {"evidence_ids": [r.id for r in rows]}

    def csv_import(session: Session, job: Job) -> dict[str, Any]:
        p = job.params
        result = stage_and_import(session, session.get_one(Account, job.account_id), blobs.get_bytes(p["key"]),
                                  p["filename"], blobs, created_by=f"job:{job.id}", max_bytes=cfg["CSV_MAX_BYTES"],
                                  retainer_id=p.get("retainer_id"))
        return _imported(session, job, result)

    def csv_read(session: Session, job: Job) -> dict[str, Any]:
        upload = read_staged(session, session.get_one(Account, job.account_id), job.params["upload_id"], blobs)
        return {"upload_id": upload.id, "status": upload.status}

    def csv_confirm(session: Session, job: Job) -> dict[str, Any]:
        p = job.params
        # A job queued before the confirm box existed has no "confirmed": it was confirmed as it stood.
        result = import_staged(session, session.get_one(Account, job.account_id), p["upload_id"], blobs, p.get("changes"),
                               confirmed=p.get("confirmed", True) or None)
        return _imported(session, job, result)

    def _imported(session: Session, job: Job, result: ImportResult) -> dict[str, Any]:
        """An import's job result; with e-mail set up, a look for the alerts it made due."""
        if cfg.get("SMTP_URL"):
            create_job(session, job.account_id, "alerts_check", {})
        return {"upload_id": result.upload_id, "counts": result.counts()}

    def incident_pdf(session: Session, job: Job) -> dict[str, Any]:
        with heavy.held():
            incident = published.prerender(session, job.account_id, job.params["incident_id"], blobs)
        return {"incident_id": incident.id}

    queue.register("evidence_ingest", evidence_ingest, "Storing the run", 1800)
    queue.register("csv_import", csv_import, "Importing the export", 600)
    queue.register("csv_read", csv_read, "Reading the export", 600)
    queue.register("csv_confirm", csv_confirm, "Importing the export", 600)
    queue.register("incident_pdf", incident_pdf, "Rendering the incident PDF", 600)
