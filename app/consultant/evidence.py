"""/evidence: upload a W&B run archive or export, list what is stored, look at one run."""

from __future__ import annotations

import tempfile
from pathlib import Path

from flask import current_app, flash, redirect, render_template, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.errors import form_status
from app.extensions import blobs
from hourtab.db import transaction
from hourtab.svgchart import line_svg
from incidents import store
from incidents.errors import InvalidEvidence
from incidents.wandb.downsample import minmax
from incidents.wandb.summaries import summarise


class EvidenceUploadForm(FlaskForm):
    file = FileField("Run archive (.zip, .tar.gz) or export (.wandb, .csv, .json, .jsonl, .parquet)",
                     validators=[FileRequired()])


@bp.route("/evidence", methods=["GET", "POST"])
@login_required
def evidence_list():
    form = EvidenceUploadForm()
    error = None
    db = get_db()
    if form.validate_on_submit():
        upload = form.file.data
        try:
            rows = _ingest(db, upload)
        except InvalidEvidence as e:
            db.rollback()
            form.file.errors.append(str(e))
            error = e
        else:
            flash(f"Stored {len(rows)} run{'s' if len(rows) != 1 else ''} from {upload.filename}.")
            if len(rows) == 1:
                return redirect(url_for("consultant.evidence_detail", evidence_id=rows[0].id))
            return redirect(url_for("consultant.evidence_list"))
    rows = store.list_evidence(db, account().id)
    return render_template("consultant/evidence/list.html", form=form, rows=rows), *form_status(error)


def _ingest(db, upload):
    suffix = store.upload_suffix(upload.filename or "")
    with tempfile.TemporaryDirectory(prefix="hourtab-upload-") as tmp:
        path = Path(tmp) / f"upload{suffix}"
        upload.save(path)
        with transaction(db):
            return store.ingest_upload(db, account().id, path, upload.filename, blobs(),
                                       max_archive_bytes=current_app.config["ARCHIVE_MAX_BYTES"])


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
