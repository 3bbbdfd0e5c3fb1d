"""/api/v1: the consultant's retainers, their ledgers, CSV imports and jobs, for their own tools.

Every route here answers for the account of the request's personal access token (``bearer``);
another account's id is a 404, the same as a missing one. The shapes are a public interface,
described in ``openapi.yaml`` beside this module (served at ``/api/v1/openapi.yaml``), which the
tests hold to the routes and to real responses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from importlib.resources import files
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from flask import Response, current_app, jsonify, request
from flask.typing import ResponseReturnValue

from app.api import bp
from app.api.bearer import api_account, api_token
from app.db import get_db
from app.extensions import blobs
from app.jobs import queue_job, title
from app.public.hours import now
from app.public.links import public_base
from hourtab.core.db import transaction
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.jobs import Job, get_job
from hourtab.core.scoping import get_owned
from hourtab.imports import uploads
from hourtab.imports.importer import ImportOptions
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.exports import report_json
from hourtab.retainers.models import Retainer
from hourtab.timesheets import profiles
from hourtab.timesheets.dateorder import DATE_ORDERS
from hourtab.timesheets.detect import FORMAT_NAMES
from hourtab.timesheets.errors import UnknownRetainer

PREFIX = "/api/v1"


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def retainer_json(retainer: Retainer) -> dict[str, Any]:
    base = public_base()
    page = f"{base}/h/{retainer.public_token}" if retainer.public_token else None
    return {"id": retainer.id, "name": retainer.name, "client": retainer.client, "active": retainer.active,
            "period": retainer.period, "reset_day": retainer.reset_day, "start": retainer.start_date.isoformat(),
            "timezone": retainer.timezone, "revision": retainer.revision, "updated_at": _iso(retainer.updated_at),
            "public_url": page, "calendar_url": f"{page}.ics" if page else None,
            "ledger_url": f"{PREFIX}/retainers/{retainer.id}/ledger"}


def job_json(job: Job) -> dict[str, Any]:
    return {**job.as_dict(), "title": title(job.kind), "result": job.result or {},
            "created_at": _iso(job.created_at), "finished_at": _iso(job.finished_at),
            "url": f"{PREFIX}/jobs/{job.id}"}


def _no_store(response: Response) -> Response:
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.route("/v1/retainers")
def v1_retainers() -> ResponseReturnValue:
    retainers = service.list_retainers(get_db(), api_account())
    return _no_store(jsonify({"retainers": [retainer_json(r) for r in retainers]}))


@bp.route("/v1/retainers/<int:retainer_id>/ledger")
def v1_ledger(retainer_id: int) -> ResponseReturnValue:
    db = get_db()
    retainer = service.get_retainer(db, api_account(), retainer_id)
    report = ledger_reads.hours_report(db, retainer, now())
    return _no_store(jsonify({"retainer": retainer_json(retainer), "ledger": report_json(report)}))


def _import_options(form: Mapping[str, str]) -> tuple[ImportOptions, bool]:
    """The options a client may send with its CSV, checked before anything is stored."""
    changes: dict[str, Any] = {}
    if form.get("format"):
        if form["format"] not in FORMAT_NAMES:
            raise InvalidInput(f"Unknown format {form['format']!r}; choose one of: {', '.join(FORMAT_NAMES)}.")
        changes["format"] = form["format"]
    if form.get("date_order"):
        if form["date_order"] not in DATE_ORDERS:
            raise InvalidInput(f"date_order is one of {', '.join(DATE_ORDERS)}, not {form['date_order']!r}.")
        changes["date_order"] = form["date_order"]
    if form.get("timezone"):
        try:
            ZoneInfo(form["timezone"])
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidInput(f"Unknown time zone {form['timezone']!r}; use an IANA name such as "
                               "Europe/Berlin.") from None
        changes["timezone"] = form["timezone"]
    if form.get("profile"):
        try:
            changes["profile"] = profiles.get_profile(get_db(), api_account(), form["profile"]).name
        except NotFound as e:  # a field of the form, not the resource asked for
            raise InvalidInput(str(e)) from None
    if form.get("retainer"):
        retainer = form["retainer"]
        if not retainer.isdigit() or not 0 < int(retainer) < 2**31:
            raise UnknownRetainer(retainer)
        get_owned(get_db(), Retainer, api_account().id, int(retainer), missing=UnknownRetainer(int(retainer)))
        changes["retainer_id"] = int(retainer)
    skip = form.get("skip_invalid", "false").lower()
    if skip not in ("true", "false", "1", "0"):
        raise InvalidInput(f"skip_invalid is true or false, not {form['skip_invalid']!r}.")
    return ImportOptions().with_changes(changes), skip in ("true", "1")


@bp.route("/v1/imports", methods=["POST"])
def v1_import() -> ResponseReturnValue:
    """Stage the CSV (kept, not parsed yet) and queue its import; the job says how it went."""
    file = request.files.get("file")
    if file is None or not file.filename:
        raise InvalidInput("Send the CSV as a multipart/form-data field named `file`.")
    options, skip_invalid = _import_options(request.form)
    db, me = get_db(), api_account()
    with transaction(db):
        upload = uploads.stage_csv(db, me, file.stream, file.filename, blobs(), created_by=f"api:{api_token().name}",
                                   max_bytes=int(current_app.config["CSV_MAX_BYTES"]), options=options,
                                   assess=False)
    job_id = queue_job(db, me.id, "csv_confirm", {"upload_id": upload.id, "filename": upload.filename,
                                                  "changes": {"skip_invalid": skip_invalid}})
    job = get_job(db, me.id, job_id)
    db.refresh(job)  # the queue may have run it already (inline, or in another process)
    response = _no_store(jsonify({"upload_id": upload.id, "job": job_json(job)}))
    response.status_code = 202
    response.headers["Location"] = f"{PREFIX}/jobs/{job.id}"
    return response


@bp.route("/v1/jobs/<job_id>")
def v1_job(job_id: str) -> ResponseReturnValue:
    return _no_store(jsonify(job_json(get_job(get_db(), api_account().id, job_id))))


@bp.route("/v1/openapi.yaml")
def v1_openapi() -> ResponseReturnValue:
    """This API's description (OpenAPI 3.1), for clients and generators; no token needed."""
    spec = files("app.api").joinpath("openapi.yaml").read_text(encoding="utf-8")
    return Response(spec, mimetype="application/yaml")
