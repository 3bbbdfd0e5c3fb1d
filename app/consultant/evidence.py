"""/evidence: upload a W&B run archive or export, list what is stored, look at one run."""

from __future__ import annotations

import hashlib
from pathlib import Path

from flask import current_app, redirect, render_template, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.jobs import enqueue
from app.jobs.handlers import start
from hourtab.blobs import BlobStore, blob_store
from hourtab.jobs.service import open_jobs
from incidents import store
from incidents.errors import InvalidEvidence
from incidents.wandb.downsample import minmax
from incidents.wandb.summaries import summarise


class EvidenceUploadForm(FlaskForm):
    file = FileField("Run archive (.zip, .tar.gz) or export (.wandb, .csv, .json, .jsonl, .parquet)",
                     validators=[FileRequired()])


def blobs() -> BlobStore:
    cfg = current_app.config
    return blob_store(Path(cfg["DATA_DIR"]), cfg.get("BLOB_URL", ""), cfg.get("BLOB_ENDPOINT_URL", ""))


@bp.route("/evidence", methods=["GET", "POST"])
@login_required
def evidence_list():
    form = EvidenceUploadForm()
    status = 200
    db = get_db()
    if form.validate_on_submit():
        upload = form.file.data
        try:
            job = _queue_ingest(db, upload)
        except InvalidEvidence as e:
            form.file.errors.append(str(e))
            status = 400
        else:
            enqueue(job.id)
            return redirect(url_for("consultant.job_detail", job_id=job.id))
    elif form.is_submitted():
        status = 400
    rows = store.list_evidence(db, account().id)
    jobs = open_jobs(db, account().id, "evidence_ingest")
    return render_template("consultant/evidence/list.html", form=form, rows=rows, jobs=jobs), status


def _queue_ingest(db, upload):
    """Keep the upload's bytes in blob storage and queue the parse: the request returns at once.

    The bytes go where the stored run keeps them (keyed by sha256), so a worker on another host
    reads them from the shared bucket, and a retried job reads the same object.
    """
    name = upload.filename or ""
    store.upload_suffix(name)                         # refuse what we cannot read before storing it
    stream = upload.stream
    sha, size = _hash(stream)
    key = store.upload_key(account().id, sha, name)
    store_ = blobs()
    if not store_.exists(key):
        stream.seek(0)
        store_.put_stream(key, stream)
    return start(db, account().id, "evidence_ingest", {"key": key, "filename": name[:300], "size": size,
                                                        "sha256": sha})


def _hash(stream) -> tuple[str, int]:
    """sha256 and size of the upload (werkzeug keeps a large one in a temporary file)."""
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


@bp.route("/evidence/<int:evidence_id>")
@login_required
def evidence_detail(evidence_id: int):
    db = get_db()
    row = store.get_evidence(db, account().id, evidence_id)
    run = store.evidence_from_row(row, blobs())
    summary = summarise(run)
    charts = _series(run)
    return render_template("consultant/evidence/detail.html", row=row, run=run, summary=summary,
                           charts=charts, inspect=row.facts.get("inspect", {}))


def _series(run) -> list[dict]:
    """A few downsampled series to draw as inline SVG polylines (min/max buckets keep spikes)."""
    out = []
    picks = [("history", c) for c in run.metrics[:4]]
    picks += [("system", c) for c in run.system_metrics if c.endswith(".gpu") or c == "system.cpu"][:3]
    for source, column in picks:
        frame = run.history if source == "history" else run.system
        x = frame.index.to_numpy(dtype=float)
        x, y = minmax(x, frame[column].to_numpy(dtype=float), 600)
        if len(y) < 2:
            continue
        x0, x1, y0, y1 = x.min(), x.max(), y.min(), y.max()
        sx = 600 / (x1 - x0 or 1)
        sy = 120 / (y1 - y0 or 1)
        points = " ".join(f"{(a - x0) * sx:.1f},{120 - (b - y0) * sy:.1f}" for a, b in zip(x, y, strict=True))
        out.append({"name": column, "points": points, "min": y0, "max": y1, "n": len(frame[column].dropna())})
    return out
