"""/evidence: upload a W&B run archive or export, list what is stored, look at one run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.errors import form_status
from app.extensions import blobs
from app.jobs import enqueue
from app.jobs.broker import start
from hourtab.core.blobs import joined
from hourtab.core.jobs import open_jobs
from hourtab.core.staging import stage_stream
from hourtab.core.svgchart import line_svg
from incidents.errors import InvalidEvidence
from incidents.evidence import store
from incidents.evidence.wandb.downsample import minmax
from incidents.evidence.wandb.summaries import summarise_run

if TYPE_CHECKING:
    from sqlalchemy.orm import Session
    from werkzeug.datastructures import FileStorage

    from hourtab.core.jobs import Job
    from incidents.evidence.wandb.evidence import RunEvidence



class EvidenceUploadForm(FlaskForm):
    file = FileField("Run archive (.zip, .tar.gz) or export (.wandb, .csv, .json, .jsonl, .parquet)",
                     validators=[FileRequired()])


@bp.route("/evidence", methods=["GET", "POST"])
@login_required
def evidence_list() -> ResponseReturnValue:
    form = EvidenceUploadForm()
    error = None
    db = get_db()
    if form.validate_on_submit():
        upload = form.file.data
        try:
            job = _queue_ingest(db, upload)
        except InvalidEvidence as e:
            form.file.errors.append(str(e))
            error = e
        else:
            enqueue(job.id)
            db.refresh(job)  # an inline queue, or a quick worker, may have finished it already
            if job.status == "failed":
                error = InvalidEvidence(job.error)
                form.file.errors.append(job.error)
            else:
                return redirect(url_for("consultant.job_detail", job_id=job.id))
    rows = store.list_evidence(db, account().id)
    jobs = open_jobs(db, account().id, "evidence_ingest")
    return render_template("consultant/evidence/list.html", form=form, rows=rows, jobs=jobs), *form_status(error)


def _queue_ingest(db: Session, upload: FileStorage) -> Job:
    """Stage the upload into blob storage and queue the parse: the request returns at once.

    The same staging step as a CSV upload (``hourtab.core.staging``): read once, hashed as it
    streams, put once where the stored run keeps it (keyed by sha256), so a worker on another
    host reads it from the shared bucket, a retried job reads the same object, and the job does
    not hash it again.
    """
    name = upload.filename or ""
    store.upload_suffix(name)                         # refuse what we cannot read before storing it
    me = account().id
    staged = stage_stream(joined(db, blobs()), upload.stream, lambda sha: store.upload_key(me, sha, name))
    return start(db, me, "evidence_ingest", {"key": staged.key, "filename": name[:300], "size": staged.size,
                                             "sha256": staged.sha256})


@bp.route("/evidence/<int:evidence_id>")
@login_required
def evidence_detail(evidence_id: int) -> ResponseReturnValue:
    db = get_db()
    row = store.get_evidence(db, account().id, evidence_id)
    run = store.evidence_from_row(row, blobs())
    summary = summarise_run(run)
    charts = _series(run)
    return render_template("consultant/evidence/detail.html", row=row, run=run, summary=summary,
                           charts=charts, inspect=row.facts.get("inspect", {}))


def _series(run: RunEvidence) -> list[dict]:
    """A few downsampled series drawn as inline SVG lines (min/max buckets keep spikes)."""
    out = []
    picks = [("history", c) for c in run.metrics[:4]]
    picks += [("system", c) for c in run.system_metrics if c.endswith(".gpu") or c == "system.cpu"][:3]
    for n, (source, column) in enumerate(picks):
        frame = run.history if source == "history" else run.system
        x = frame.index.to_numpy(dtype=float)
        x, y = minmax(x, frame[column].to_numpy(dtype=float), 600)
        if len(y) < 2:
            continue
        svg = line_svg(x, y, title=str(column), title_id=f"series-{n}")
        out.append({"name": column, "svg": svg, "min": y.min(), "max": y.max(), "n": len(frame[column].dropna())})
    return out
