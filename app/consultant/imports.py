"""/imports: upload a time-tracker export, preview it, confirm, and audit past imports.

The file is staged when uploaded (``hourtab.imports.uploads``: kept in the blob store and parsed
once), with its options on the upload row; the preview reads that parse, a changed option (another
date order, time zone or column mapping) is posted, kept and read once, and confirming imports it.
A query string on the preview (an old link) still reads the file that way, for that page only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
from flask import Response, current_app, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from sqlalchemy.orm import Session

from app.auth import account
from app.consultant import bp
from app.consultant.accounts import zone_choices
from app.consultant.changes import CONFIRM_FIELD, Applied, run_change
from app.db import get_db
from app.errors import form_status
from app.extensions import blobs
from app.jobs import queue_job
from app.jobs.alerts import queue_alert_check
from hourtab.core.accounts import Account
from hourtab.core.db import transaction
from hourtab.core.jobs import open_jobs
from hourtab.core.scoping import get_owned
from hourtab.imports import importer, removal, uploads
from hourtab.retainers.changes import NeedsConfirmation
from hourtab.retainers.service import list_retainers
from hourtab.timesheets import profiles
from hourtab.timesheets.detect import FORMAT_NAMES, sniff_header
from hourtab.timesheets.errors import (
    AmbiguousDateOrder,
    RowsRejected,
    TimesheetError,
    UnknownFormat,
)
from hourtab.timesheets.models import Upload
from hourtab.timesheets.report import totals
from hourtab.timesheets.spec import DURATION_UNITS, FIELDS
from hourtab.timesheets.suggest import samples_of, suggest
from hourtab.timesheets.zone import upload_zone

if TYPE_CHECKING:
    from collections.abc import Mapping

    from hourtab.retainers.changes import ChangePreview


PREVIEW_ROWS = 20
FIELD_LABELS = {
    "date": "Date", "start_date": "Start date", "start_time": "Start time", "end_date": "End date",
    "end_time": "End time", "start": "Start (date and time)", "end": "End (date and time)",
    "duration": "Duration", "client": "Client", "project": "Project", "task": "Task",
    "description": "Description", "tags": "Tags", "billable": "Billable", "user": "User",
    "first_name": "First name", "last_name": "Last name",
}


def _changes(values: Mapping[str, str]) -> dict[str, Any]:
    """The import options a request sends (only those it names: the rest stay as kept on the upload)."""
    out: dict[str, Any] = {}
    for key, default in (("format", "auto"), ("date_order", None), ("timezone", None),
                         ("duration_unit", "auto"), ("profile", None)):
        if key in values:
            out[key] = values.get(key) or default
    if "retainer" in values:
        out["retainer_id"] = int(values["retainer"]) if values["retainer"].isdigit() else None
    if any(k.startswith("m_") for k in values):
        out["mapping"] = {f: values[f"m_{f}"] for f in FIELDS if values.get(f"m_{f}")} or None
    return out


def _query(options: dict[str, Any]) -> dict[str, Any]:
    """Options as query-string or hidden-field values (the one-off reading of an old link)."""
    args = {"format": options.get("format"), "date_order": options.get("date_order"),
            "timezone": options.get("timezone"), "profile": options.get("profile"),
            "duration_unit": options.get("duration_unit"),
            "retainer": str(options["retainer_id"]) if options.get("retainer_id") else None}
    args.update({f"m_{k}": v for k, v in (options.get("mapping") or {}).items()})
    return {k: v for k, v in args.items() if v and v != "auto"}


@bp.route("/imports", methods=["GET", "POST"])
@login_required
def imports() -> ResponseReturnValue:
    db = get_db()
    me = account()
    if request.method == "GET":
        return _upload_page()
    upload = request.files.get("file")
    if upload is None or not upload.filename:
        return _upload_page("Choose a CSV file to upload.")
    options = importer.ImportOptions().with_changes(_changes(request.form))
    try:
        with transaction(db):
            staged = uploads.stage_csv(db, me, upload.stream, upload.filename, blobs(), created_by=me.email,
                                       max_bytes=int(current_app.config["CSV_MAX_BYTES"]), options=options,
                                       read_later_above=_queue_above())
    except TimesheetError as e:  # shown in the upload form, with the error's own status
        return _upload_page(str(e), e)
    return _to_preview(staged)


def _queue_above() -> int:
    """Files above this many bytes are read and imported by a queued job (``HOURTAB_CSV_QUEUE_ABOVE_KB``)."""
    return int(current_app.config["CSV_QUEUE_ABOVE_BYTES"])


def _to_preview(upload: Upload) -> ResponseReturnValue:
    """The preview, or, for a large file left to read in the background, the page of the job reading it."""
    if upload.status != "reading":
        return redirect(url_for("consultant.import_preview", upload_id=upload.id))
    job_id = queue_job(get_db(), upload.account_id, "csv_read", {"upload_id": upload.id, "filename": upload.filename})
    return redirect(url_for("consultant.job_detail", job_id=job_id))


@bp.route("/imports/<int:upload_id>/options", methods=["POST"])
@login_required
def import_options(upload_id: int) -> ResponseReturnValue:
    """Keep the options the preview's forms chose on the upload, then preview it with them."""
    with transaction(get_db()):
        upload = uploads.set_options(get_db(), account(), upload_id, blobs(), _changes(request.values),
                                     read_later_above=_queue_above())
    return _to_preview(upload)


def _my_upload(upload_id: int) -> tuple[Session, Account, Upload]:
    """The request's session, the signed-in account and that account's upload (404 for anyone else's)."""
    db, me = get_db(), account()
    return db, me, get_owned(db, Upload, me.id, upload_id)


def _upload_page(message: str | None = None, error: Exception | None = None) -> ResponseReturnValue:
    db = get_db()
    me = account()
    page = render_template("consultant/imports/upload.html", recent=uploads.list_uploads(db, me, limit=10),
                           profiles=profiles.list_profiles(db, me), formats=FORMAT_NAMES, error=message,
                           retainers=list_retainers(db, me), states=importer.UPLOAD_STATES,
                           timezone=me.timezone, max_mb=current_app.config["CSV_MAX_BYTES"] // 1048576)
    return page, *form_status(error)


@bp.route("/imports/history")
@login_required
def import_history() -> ResponseReturnValue:
    return render_template("consultant/imports/history.html", states=importer.UPLOAD_STATES,
                           uploads=uploads.list_uploads(get_db(), account(), limit=1000))


@bp.route("/imports/<int:upload_id>/preview")
@login_required
def import_preview(upload_id: int) -> ResponseReturnValue:
    db, me, upload = _my_upload(upload_id)
    if upload.status == "imported":
        return redirect(url_for("consultant.import_detail", upload_id=upload.id))
    if upload.status == "reading":   # a large file: its job parses it; the page never does
        jobs = [j for j in open_jobs(db, me.id, "csv_read") if j.params.get("upload_id") == upload.id]
        return render_template("consultant/imports/reading.html", upload=upload, job=jobs[0] if jobs else None)
    override = _changes(request.args)
    options = uploads.options_of(upload).with_changes(override)
    context = {"upload": upload, "options": options, "query": _query(override), "ambiguity": None, "error": None,
               "report": None, "rows": [], "totals": None, "diff": None, "formats": FORMAT_NAMES,
               "retainers": list_retainers(db, me), "confirm_field": CONFIRM_FIELD}
    error = None
    try:
        frame, report, diff, options = uploads.preview(db, me, upload.id, blobs(), override)
    except UnknownFormat:
        return redirect(url_for("consultant.import_mapping", upload_id=upload.id, **_query(override)))
    except AmbiguousDateOrder as e:
        context["ambiguity"] = e
        context["report"] = e.report
    except TimesheetError as e:
        context["error"] = str(e)
        error = e
    else:
        auto = upload_zone(db, me, None, report.format)
        context.update(report=report, rows=_local_rows(frame.head(PREVIEW_ROWS), report.timezone),
                       totals=totals(frame), diff=diff, automatic=f"{auto.name}: {auto.why}",
                       zones=zone_choices(options.timezone))
    return render_template("consultant/imports/preview.html", **context), *form_status(error)


def _local_rows(frame: pd.DataFrame, zone: str) -> list[dict]:
    """The first rows with their start in the zone each was read in (what the export showed)."""
    zones = frame["timezone"] if "timezone" in frame else [zone] * len(frame)
    return [{**r, "start_local":s.tz_convert(z).strftime("%Y-%m-%d %H:%M:%S") if not pd.isna(s) else ""}
            for r, s, z in zip(frame.to_dict("records"), frame["start_at"], zones, strict=True)]


@bp.route("/imports/<int:upload_id>/confirm", methods=["POST"])
@login_required
def import_confirm(upload_id: int) -> ResponseReturnValue:
    db = get_db()
    me = account()
    changes = {**_changes(request.form), "skip_invalid": request.form.get("skip_invalid") == "1"}
    # The preview lists the closed periods the import revises; confirming them is a box of its own.
    confirmed = request.form.get(CONFIRM_FIELD) == "yes" or None
    upload = get_owned(db, Upload, me.id, upload_id)
    if uploads.queued_for_import(upload, _queue_above()) and upload.status != "imported":
        if upload.status == "bad_rows" and not changes["skip_invalid"]:
            flash("Some rows are bad: tick the box to import the valid ones, or fix the file and upload it again.")
            return redirect(url_for("consultant.import_preview", upload_id=upload_id))
        job_id = queue_job(db, me.id, "csv_confirm", {"upload_id": upload_id, "filename": upload.filename,
                                                      "changes": changes, "confirmed": bool(confirmed)})
        return redirect(url_for("consultant.job_detail", job_id=job_id))
    try:
        with transaction(db):
            result = uploads.import_staged(db, me, upload_id, blobs(), changes, confirmed=confirmed)
    except (RowsRejected, NeedsConfirmation) as e:
        flash(str(e))
        return redirect(url_for("consultant.import_preview", upload_id=upload_id,
                                **_query({k: v for k, v in changes.items() if k != "skip_invalid"})))
    queue_alert_check(current_app, db, me.id)
    c = result.counts()
    flash(f"Imported: {c['new']} new, {c['unchanged']} unchanged, {c['changed']} changed, "
          f"{c['missing']} missing upstream, {c['skipped']} skipped.")
    return redirect(url_for("consultant.import_detail", upload_id=upload_id))


@bp.route("/imports/<int:upload_id>/mapping", methods=["GET", "POST"])
@login_required
def import_mapping(upload_id: int) -> ResponseReturnValue:
    """Map an unknown CSV's columns to entry fields; optionally save the mapping as a named profile."""
    db, me, upload = _my_upload(upload_id)
    changes = _changes(request.values)
    options = uploads.options_of(upload).with_changes(changes)
    if request.method == "POST":
        name = request.form.get("profile_name", "").strip()
        with transaction(db):
            if name:  # the mapping is kept under its name, and the upload reads through it
                profiles.save_profile(db, me, name, options.mapping or {}, options.duration_unit,
                                      options.date_order)
                changes = {**changes, "profile": name, "mapping": None}
            upload = uploads.set_options(db, me, upload.id, blobs(), changes, read_later_above=_queue_above())
        return _to_preview(upload)
    _, head = uploads.head_text(db, me, upload.id, blobs())
    header = sniff_header(head)
    guess = suggest(header.columns, samples_of(head, header.delimiter, header.columns))
    chosen = options.mapping or guess.mapping
    unit = options.duration_unit if options.mapping else guess.duration_unit
    return render_template("consultant/imports/mapping.html", upload=upload, columns=header.columns,
                           fields=FIELDS, labels=FIELD_LABELS, units=DURATION_UNITS, options=options,
                           chosen=chosen, unit=unit, guess=guess, saved=profiles.list_profiles(db, me),
                           suggested_for={column: fld for fld, column in guess.mapping.items()})


@bp.route("/imports/<int:upload_id>")
@login_required
def import_detail(upload_id: int) -> ResponseReturnValue:
    db, me, upload = _my_upload(upload_id)
    return render_template("consultant/imports/detail.html", upload=upload, states=importer.UPLOAD_STATES,
                           flagged=removal.removal_candidates(db, me, upload.id),
                           removed=removal.removed_entries(db, me, upload.id),
                           entries=importer.upload_entries(db, me, upload.id, limit=50))


@bp.route("/imports/<int:upload_id>/original")
@login_required
def import_original(upload_id: int) -> ResponseReturnValue:
    """The uploaded bytes, as a download (never rendered inline)."""
    upload, data = uploads.original(get_db(), account(), upload_id, blobs())
    safe = "".join(ch for ch in upload.filename if ch.isalnum() or ch in "._-") or "upload.csv"
    return Response(data, mimetype="application/octet-stream",
                    headers={"Content-Disposition": f'attachment; filename="{safe}"'})


def _entry_ids() -> list[int]:
    return [int(v) for v in request.values.getlist("entry") if v.isdigit()]


@bp.route("/imports/<int:upload_id>/remove")
@login_required
def import_remove_review(upload_id: int) -> ResponseReturnValue:
    """The confirmation: the chosen rows and the hours removing them takes away."""
    db, me, upload = _my_upload(upload_id)
    chosen = removal.removal_candidates(db, me, upload.id, _entry_ids())
    if not chosen.entries:
        flash("Tick the entries to remove first.")
        return redirect(url_for("consultant.import_detail", upload_id=upload.id))
    return render_template("consultant/imports/remove.html", upload=upload, chosen=chosen)


def _remove(db: Session, me: Account, upload_id: int) -> tuple[int, str]:
    chosen = removal.removal_candidates(db, me, upload_id, _entry_ids())
    return removal.confirm_removal(db, me, upload_id=upload_id, entry_ids=[e.id for e in chosen.entries]), \
        chosen.hours_text


@bp.route("/imports/<int:upload_id>/remove", methods=["POST"])
@login_required
def import_remove(upload_id: int) -> ResponseReturnValue:
    """Remove the chosen entries; where that revises a closed period, its preview asks first."""
    detail = url_for("consultant.import_detail", upload_id=upload_id)
    outcome = run_change(lambda db, me: _remove(db, me, upload_id), title="Remove these entries?", cancel=detail)
    if not isinstance(outcome, Applied):
        return outcome
    count, hours = outcome.result
    flash(f"Removed {count} entr{'y' if count == 1 else 'ies'} ({hours} h). "
          f"You can restore {'it' if count == 1 else 'them'} on this page." + _revised(outcome.preview))
    return redirect(detail)


@bp.route("/imports/<int:upload_id>/restore", methods=["POST"])
@login_required
def import_restore(upload_id: int) -> ResponseReturnValue:
    """Restore removed entries; where that revises a closed period, its preview asks first."""
    ids = [int(v) for v in request.form.getlist("entry") if v.isdigit()] or None
    detail = url_for("consultant.import_detail", upload_id=upload_id)
    outcome = run_change(lambda db, me: removal.restore_removed(db, me, upload_id, ids),
                         title="Restore these entries?", cancel=detail)
    if not isinstance(outcome, Applied):
        return outcome
    count = outcome.result
    flash(f"Restored {count} entr{'y' if count == 1 else 'ies'}." + _revised(outcome.preview))
    return redirect(detail)


def _revised(preview: ChangePreview) -> str:
    n = len(preview.periods)
    return f" {n} closed period{'' if n == 1 else 's'} revised." if n else ""
