"""/imports: upload a time-tracker export, preview it, confirm, and audit past imports.

The file is kept (status "staged") when uploaded, so the preview can be re-read with another
date order, time zone or column mapping without uploading again; confirming imports it.
"""

from __future__ import annotations

from flask import Response, current_app, flash, redirect, render_template, request, url_for
from flask_login import login_required

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.jobs.alerts import queue_alert_check
from hourtab.db import transaction
from hourtab.scoping import get_owned
from hourtab.timesheets import importer, profiles
from hourtab.timesheets.detect import FORMAT_NAMES, sniff_header
from hourtab.timesheets.encoding import to_utf8
from hourtab.timesheets.errors import AmbiguousDateOrder, RowsRejected, TimesheetError, UnknownFormat
from hourtab.timesheets.models import Upload
from hourtab.timesheets.report import totals
from hourtab.timesheets.spec import DURATION_UNITS, FIELDS

PREVIEW_ROWS = 20
FIELD_LABELS = {
    "date": "Date", "start_date": "Start date", "start_time": "Start time", "end_date": "End date",
    "end_time": "End time", "start": "Start (date and time)", "end": "End (date and time)",
    "duration": "Duration", "client": "Client", "project": "Project", "task": "Task",
    "description": "Description", "tags": "Tags", "billable": "Billable", "user": "User",
    "first_name": "First name", "last_name": "Last name",
}


def _options() -> importer.ImportOptions:
    """Import options from the query string or form (the preview and confirm share them)."""
    values = request.values
    mapping = {f: values.get(f"m_{f}", "") for f in FIELDS if values.get(f"m_{f}")}
    return importer.ImportOptions(
        format=values.get("format") or "auto",
        date_order=values.get("date_order") or None,
        timezone=values.get("timezone") or None,
        mapping=mapping or None,
        duration_unit=values.get("duration_unit") or "auto",
        profile=values.get("profile") or None,
        skip_invalid=values.get("skip_invalid") == "1",
    )


def _query(options: importer.ImportOptions, **override) -> dict[str, str]:
    args = {"format": options.format, "date_order": options.date_order or "", "timezone": options.timezone or "",
            "profile": options.profile or "", "duration_unit": options.duration_unit,
            "skip_invalid": "1" if options.skip_invalid else ""}
    args.update({f"m_{k}": v for k, v in (options.mapping or {}).items()})
    args.update(override)
    return {k: v for k, v in args.items() if v}


@bp.route("/imports", methods=["GET", "POST"])
@login_required
def imports():
    db = get_db()
    me = account()
    if request.method == "POST":
        upload = request.files.get("file")
        if upload is None or not upload.filename:
            flash("Choose a CSV file to upload.")
            return redirect(url_for("consultant.imports"))
        limit = int(current_app.config["CSV_MAX_BYTES"])
        upload.stream.seek(0, 2)
        size = upload.stream.tell()
        upload.stream.seek(0)
        if size > limit:
            from hourtab.timesheets.errors import CsvTooLarge

            raise CsvTooLarge(size, limit)
        with transaction(db):
            staged = importer.stage_upload(db, me, upload.stream.read(), upload.filename, created_by=me.email,
                                           max_bytes=limit)
        return redirect(url_for("consultant.import_preview", upload_id=staged.id, **_query(_options())))
    return render_template("consultant/imports/upload.html", recent=importer.list_uploads(db, me, limit=10),
                           profiles=profiles.list_profiles(db, me), formats=FORMAT_NAMES,
                           timezone=me.timezone, max_mb=current_app.config["CSV_MAX_BYTES"] // 1048576)


@bp.route("/imports/history")
@login_required
def import_history():
    return render_template("consultant/imports/history.html",
                           uploads=importer.list_uploads(get_db(), account(), limit=1000))


@bp.route("/imports/<int:upload_id>/preview")
@login_required
def import_preview(upload_id: int):
    db = get_db()
    me = account()
    upload = get_owned(db, Upload, me.id, upload_id)
    if upload.status != "staged":
        return redirect(url_for("consultant.import_detail", upload_id=upload.id))
    options = _options()
    context = {"upload": upload, "options": options, "query": _query(options), "ambiguity": None, "error": None,
               "report": None, "rows": [], "totals": None, "formats": FORMAT_NAMES}
    status = 200
    try:
        frame, report = importer.read_for_account(db, me, upload.content, options,
                                                  int(current_app.config["CSV_MAX_BYTES"]))
    except UnknownFormat:
        return redirect(url_for("consultant.import_mapping", upload_id=upload.id, **_query(options)))
    except AmbiguousDateOrder as e:
        context["ambiguity"] = e
        context["report"] = e.report
    except TimesheetError as e:
        context["error"] = str(e)
        status = 400
    else:
        context.update(report=report, rows=frame.head(PREVIEW_ROWS).to_dict("records"), totals=totals(frame))
    return render_template("consultant/imports/preview.html", **context), status


@bp.route("/imports/<int:upload_id>/confirm", methods=["POST"])
@login_required
def import_confirm(upload_id: int):
    db = get_db()
    me = account()
    options = _options()
    try:
        with transaction(db):
            result = importer.import_upload(db, me, upload_id, options, int(current_app.config["CSV_MAX_BYTES"]))
    except RowsRejected as e:
        flash(str(e))
        return redirect(url_for("consultant.import_preview", upload_id=upload_id, **_query(options)))
    queue_alert_check(current_app._get_current_object(), db, me.id)
    c = result.counts()
    flash(f"Imported: {c['new']} new, {c['unchanged']} unchanged, {c['changed']} changed, "
          f"{c['missing']} missing upstream, {c['skipped']} skipped.")
    return redirect(url_for("consultant.import_detail", upload_id=upload_id))


@bp.route("/imports/<int:upload_id>/mapping", methods=["GET", "POST"])
@login_required
def import_mapping(upload_id: int):
    """Map an unknown CSV's columns to entry fields; optionally save the mapping as a named profile."""
    db = get_db()
    me = account()
    upload = get_owned(db, Upload, me.id, upload_id)
    options = _options()
    if request.method == "POST":
        name = request.form.get("profile_name", "").strip()
        if name:
            with transaction(db):
                profiles.save_profile(db, me, name, options.mapping or {}, options.duration_unit,
                                      options.date_order)
            return redirect(url_for("consultant.import_preview", upload_id=upload.id,
                                    **_query(options, profile=name, **{f"m_{f}": "" for f in FIELDS})))
        return redirect(url_for("consultant.import_preview", upload_id=upload.id, **_query(options)))
    header = sniff_header(to_utf8(upload.content).head())
    return render_template("consultant/imports/mapping.html", upload=upload, columns=header.columns,
                           fields=FIELDS, labels=FIELD_LABELS, units=DURATION_UNITS, options=options,
                           saved=profiles.list_profiles(db, me))


@bp.route("/imports/<int:upload_id>")
@login_required
def import_detail(upload_id: int):
    db = get_db()
    me = account()
    upload = get_owned(db, Upload, me.id, upload_id)
    return render_template("consultant/imports/detail.html", upload=upload,
                           missing=importer.upload_entries(db, me, upload.id, status="missing_upstream"),
                           entries=importer.upload_entries(db, me, upload.id, limit=50))


@bp.route("/imports/<int:upload_id>/original")
@login_required
def import_original(upload_id: int):
    """The uploaded bytes, as a download (never rendered inline)."""
    upload = get_owned(get_db(), Upload, account().id, upload_id)
    safe = "".join(ch for ch in upload.filename if ch.isalnum() or ch in "._-") or "upload.csv"
    return Response(upload.content, mimetype="application/octet-stream",
                    headers={"Content-Disposition": f'attachment; filename="{safe}"'})


@bp.route("/imports/<int:upload_id>/remove-missing", methods=["POST"])
@login_required
def import_remove_missing(upload_id: int):
    db = get_db()
    with transaction(db):
        count = importer.confirm_removal(db, account(), upload_id=upload_id)
    flash(f"{count} entr{'y' if count == 1 else 'ies'} marked as removed.")
    return redirect(url_for("consultant.import_detail", upload_id=upload_id))
