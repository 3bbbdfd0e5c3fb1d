"""/account/connections: Settings → Connections (add a tracker's API, choose its workspace, see the last
sync, sync now, pause, resume with a new token, remove)."""

from __future__ import annotations

from flask import current_app, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from flask_wtf import FlaskForm
from wtforms import PasswordField, SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import Length

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.errors import form_status
from app.extensions import sync_limits, tokens
from app.jobs.sync import queue_sync
from hourtab.core.db import transaction
from hourtab.core.errors import Conflict, InvalidInput, LimitReached, Unauthorized
from hourtab.sync import service
from hourtab.sync.clients import TRACKER_NAMES, tracker
from hourtab.sync.errors import SyncError
from hourtab.sync.models import Connection


class ConnectForm(FlaskForm):
    tracker = SelectField("Tracker", choices=[SelectChoice(n, tracker(n).label) for n in TRACKER_NAMES])
    token = PasswordField("API token", validators=[Length(max=500)])
    api_url = StringField("API URL (Kimai: your instance; Clockify: a regional host; else leave empty)",
                          validators=[Length(max=300)])
    workspace = StringField("Workspace id (optional: the token's default or only one is used)",
                            validators=[Length(max=100)])
    harvest_account = StringField("Harvest account id (Harvest only)", validators=[Length(max=30)])


def _page(form: ConnectForm, error: Exception | None = None) -> ResponseReturnValue:
    me = account()
    connections = service.list_connections(get_db(), me.id)
    return render_template("consultant/connections.html", form=form, connections=connections,
                           label=lambda c: tracker(c.tracker).label, minutes=current_app.config["SYNC_MINUTES"],
                           pending={c.id: service.pending_job(get_db(), c) for c in connections}), *form_status(error)


@bp.route("/account/connections", methods=["GET", "POST"])
@login_required
def connections() -> ResponseReturnValue:
    form = ConnectForm()
    if request.method == "GET" or not form.validate_on_submit():
        return _page(form)
    db = get_db()
    me = db.merge(account())
    try:
        with transaction(db):
            connection = service.connect(db, me, tokens(), form.tracker.data, form.token.data or "",
                                         api_url=form.api_url.data, workspace=form.workspace.data,
                                         harvest_account=form.harvest_account.data, wait_for_choice=True,
                                         limits=sync_limits(current_app.config))
    except (InvalidInput, Unauthorized, Conflict, SyncError, LimitReached) as e:
        form.form_errors.append(str(e))
        return _page(form, e)
    if connection.status == "choose_workspace":
        flash(f"{tracker(connection.tracker).label} connected; choose which workspace to read.")
        return redirect(url_for("consultant.connections"))
    job = queue_sync(current_app, db, connection, "connect")
    flash(f"{tracker(connection.tracker).label} connected; the first sync reads your history.")
    return redirect(url_for("consultant.job_detail", job_id=job.id))


def _mine(connection_id: int) -> Connection:
    return service.get_connection(get_db(), account().id, connection_id)


@bp.route("/account/connections/<int:connection_id>/workspace", methods=["POST"])
@login_required
def connection_workspace(connection_id: int) -> ResponseReturnValue:
    db = get_db()
    with transaction(db):
        connection = service.choose_workspace(db, db.merge(account()), connection_id, request.form.get("workspace", ""))
    job = queue_sync(current_app, db, connection, "connect")
    return redirect(url_for("consultant.job_detail", job_id=job.id))


@bp.route("/account/connections/<int:connection_id>/sync", methods=["POST"])
@login_required
def connection_sync(connection_id: int) -> ResponseReturnValue:
    connection = _mine(connection_id)
    if connection.status != "active":
        raise InvalidInput("Resume the connection before syncing it.")
    job = queue_sync(current_app, get_db(), connection, "now")
    return redirect(url_for("consultant.job_detail", job_id=job.id))


@bp.route("/account/connections/<int:connection_id>/pause", methods=["POST"])
@login_required
def connection_pause(connection_id: int) -> ResponseReturnValue:
    db = get_db()
    with transaction(db):
        connection = service.pause(db, db.merge(account()), connection_id)
    flash(f"{tracker(connection.tracker).label} paused; your clients' pages keep the hours synced so far.")
    return redirect(url_for("consultant.connections"))


@bp.route("/account/connections/<int:connection_id>/resume", methods=["POST"])
@login_required
def connection_resume(connection_id: int) -> ResponseReturnValue:
    db = get_db()
    with transaction(db):
        connection = service.resume(db, db.merge(account()), connection_id, tokens(), request.form.get("token") or None)
    job = queue_sync(current_app, db, connection, "resume")
    return redirect(url_for("consultant.job_detail", job_id=job.id))


@bp.route("/account/connections/<int:connection_id>/remove", methods=["POST"])
@login_required
def connection_remove(connection_id: int) -> ResponseReturnValue:
    db = get_db()
    label = tracker(_mine(connection_id).tracker).label
    with transaction(db):
        service.remove(db, db.merge(account()), connection_id)
    flash(f"{label} removed and its token deleted; the entries it synced stay.")
    return redirect(url_for("consultant.connections"))
