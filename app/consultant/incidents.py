"""/incidents: create and edit incident writeups, attach evidence and entries, publish.

Each POST is one small edit calling one service function inside a transaction, then redirects back
to the editor; the report preview and PDF use the same templates as the public page.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Response, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from sqlalchemy.orm import Session

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.extensions import blobs
from app.formvalues import form_date, form_datetime, form_id, form_ids
from app.jobs import enqueue
from app.jobs.broker import start
from hourtab.core.db import transaction
from hourtab.core.scoping import select_owned
from hourtab.retainers.models import Retainer
from hourtab.timesheets.models import TimeEntry
from incidents.errors import InvalidEvidence
from incidents.evidence import store
from incidents.writeups import billed_entries, postmortem_edits, service
from incidents.writeups.models import (
    ACTION_KINDS,
    INCIDENT_STATUSES,
    MILESTONES,
    PHASES,
    SECTIONS,
    SEVERITIES,
    Incident,
)
from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.publish_checks import publish_warnings
from incidents.writeups.report.timeline import merged


def _incident(incident_id: int) -> Incident:
    return service.get_incident(get_db(), account().id, incident_id)


def _back(incident_id: int, anchor: str = "") -> ResponseReturnValue:
    return redirect(url_for("consultant.incident_edit", incident_id=incident_id) + (f"#{anchor}" if anchor else ""))


@bp.route("/incidents", methods=["GET", "POST"])
@login_required
def incidents_list() -> ResponseReturnValue:
    db, me = get_db(), account()
    if request.method == "POST":
        retainer = form_id("retainer_id")
        with transaction(db):
            incident = service.create_incident(db, me.id, request.form.get("title", ""), retainer)
        return _back(incident.id)
    retainers = db.scalars(select_owned(Retainer, me.id).order_by(Retainer.name)).all()
    return render_template("consultant/incidents/list.html", incidents=service.list_incidents(db, me.id),
                           retainers=retainers)


@bp.route("/incidents/<int:incident_id>")
@login_required
def incident_edit(incident_id: int) -> ResponseReturnValue:
    db, me = get_db(), account()
    incident = _incident(incident_id)
    inputs = service.report_input(db, incident, blobs(), me.display_name, with_runs=False)
    events = merged(inputs.__class__(**{**inputs.__dict__, "runs": ()}), include_hidden=True)
    assigned = {link.time_entry_id: link.phase for link in incident.entries}
    entries = db.scalars(select_owned(TimeEntry, me.id).where(TimeEntry.status == "active")
                         .order_by(TimeEntry.local_date.desc(), TimeEntry.id.desc()).limit(200)).all()
    evidence = store.list_evidence(db, me.id)
    names = {e.id: e for e in evidence}
    return render_template("consultant/incidents/edit.html", incident=incident, evidence=evidence, names=names,
                           entries=entries, assigned=assigned, events=events, sections=SECTIONS,
                           phases=PHASES, action_kinds=ACTION_KINDS, severities=SEVERITIES,
                           statuses=INCIDENT_STATUSES, milestones=MILESTONES)


def _edit(rule: str, anchor: str = "", saved: str = "") -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register an editor form's POST at ``/incidents/<id><rule>``.

    The decorated function makes one change given the session and the signed-in account's incident;
    it runs in one transaction, then the browser goes back to the editor at ``anchor`` (with the
    ``saved`` message once it committed).
    """

    def register(change: Callable[..., None]) -> Callable[..., None]:
        @bp.route(f"/incidents/<int:incident_id>{rule}", methods=["POST"], endpoint=change.__name__)
        @login_required
        def view(incident_id: int, **path_args: Any) -> ResponseReturnValue:
            db = get_db()
            incident = _incident(incident_id)
            with transaction(db):
                change(db, incident, **path_args)
            if saved:
                flash(saved)
            return _back(incident_id, anchor)

        return view

    return register


@_edit("/evidence", "evidence")
def incident_attach(db: Session, incident: Incident) -> None:
    evidence_id = form_id("evidence_id")
    if evidence_id is not None:
        service.attach_run(db, incident, evidence_id, request.form.get("role", ""))
    elif request.files.get("profile"):
        upload = request.files["profile"]
        name = Path(upload.filename or "profile.json").name[:200]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / (name if name.endswith((".json", ".gz", ".txt")) else name + ".txt")
            upload.save(path)
            service.attach_profile(db, incident, *service.read_profile(path))
    else:
        raise InvalidEvidence("Choose a stored run and a role, or a profile file.")


@_edit("/evidence/<int:link_id>/detach", "evidence")
def incident_detach(db: Session, incident: Incident, link_id: int) -> None:
    service.detach(db, incident, link_id)


@_edit("/entries", "entries")
def incident_entries(db: Session, incident: Incident) -> None:
    ids = form_ids("entry_id")
    if request.form.get("action") == "remove":
        for i in ids:
            billed_entries.unassign_entry(db, incident, i)
    else:
        phase = request.form.get("custom_phase", "").strip() or request.form.get("phase", "")
        billed_entries.assign_entries(db, incident, ids, phase)


@_edit("/text", saved="Saved.")
def incident_text(db: Session, incident: Incident) -> None:
    form = request.form
    edits = service.Edits(title=form.get("title"), environment=form.get("environment"),
                          sections={k: form.get(f"section_{k}", "") for k in SECTIONS},
                          fix_before=form.get("fix_before"), fix_after=form.get("fix_after"),
                          log_entry=form.get("log_entry"))
    service.update_incident(db, incident, edits)
    if form.get("regenerate"):
        service.update_incident(db, incident, service.Edits(log_entry=""))
        service.refresh_generated(db, incident, blobs(), account().display_name)


@_edit("/timeline", "timeline")
def incident_timeline(db: Session, incident: Incident) -> None:
    if request.form.get("key"):
        service.set_hidden(db, incident, request.form["key"], request.form.get("hidden") == "1")
    else:
        service.add_event(db, incident, form_datetime("at"), request.form.get("text", ""))


@_edit("/actions", "actions")
def incident_actions(db: Session, incident: Incident) -> None:
    service.add_action(db, incident, request.form.get("text", ""), request.form.get("owner", ""),
                       form_date("due"), request.form.get("kind", "prevent"))


@_edit("/actions/<int:action_id>", "actions", saved="Saved.")
def incident_action_edit(db: Session, incident: Incident, action_id: int) -> None:
    if request.form.get("action") == "remove":
        postmortem_edits.remove_action(db, incident, action_id)
    else:
        postmortem_edits.update_action(db, incident, action_id, request.form.get("text", ""),
                                 request.form.get("owner", ""), form_date("due"), request.form.get("kind", "prevent"))


@_edit("/postmortem", "postmortem", saved="Saved.")
def incident_postmortem(db: Session, incident: Incident) -> None:
    form = request.form
    postmortem_edits.update_postmortem(db, incident, postmortem_edits.PostmortemEdits(
        severity=form.get("severity", ""), incident_status=form.get("incident_status", ""),
        milestones={name: form_datetime(f"{name}_at") for name in MILESTONES},
        gpu_hour_price=form.get("gpu_hour_price", ""), currency=form.get("currency", "USD")))


@bp.route("/incidents/<int:incident_id>/publish", methods=["POST"])
@login_required
def incident_publish(incident_id: int) -> ResponseReturnValue:
    db = get_db()
    incident = _incident(incident_id)
    with transaction(db):
        if not incident.log_entry:
            service.refresh_generated(db, incident, blobs(), account().display_name)
        service.publish(db, incident, request.form.get("publish") != "0")
    flash("Published." if incident.status == "published" else "Withdrawn: the writeup is a draft again.")
    if incident.status == "published":
        report = build_incident_report(service.report_input(db, incident, blobs(), account().display_name))
        for warning in publish_warnings(report):
            flash(warning)
    if incident.status == "published" and incident.retainer_id:
        _prepare_published(db, incident)
    return _back(incident_id)


def _prepare_published(db: Session, incident: Incident) -> None:
    """Render the public PDF and page on a worker, and tell the retainer's alert subscribers."""
    token = db.get_one(Retainer, incident.retainer_id).public_token
    params = {"incident_id": incident.id, "public_url": f"/h/{token}/incidents/{incident.slug}" if token else ""}
    enqueue(start(db, account().id, "incident_publish", params).id)


@bp.route("/incidents/<int:incident_id>/render", methods=["POST"])
@login_required
def incident_render(incident_id: int) -> ResponseReturnValue:
    """Render the PDF on a worker; the job page shows progress and then opens the PDF."""
    db = get_db()
    incident = _incident(incident_id)
    job = start(db, account().id, "incident_pdf", {"incident_id": incident.id})
    enqueue(job.id)
    return redirect(url_for("consultant.job_detail", job_id=job.id))


@bp.route("/incidents/<int:incident_id>/preview")
@login_required
def incident_preview(incident_id: int) -> ResponseReturnValue:
    html = service.incident_document(get_db(), _incident(incident_id), blobs(), "html", author=account().display_name,
                                     pdf_url=url_for("consultant.incident_pdf", incident_id=incident_id))
    return Response(html, mimetype="text/html")


@bp.route("/incidents/<int:incident_id>.pdf")
@login_required
def incident_pdf(incident_id: int) -> ResponseReturnValue:
    incident = _incident(incident_id)
    data = service.incident_document(get_db(), incident, blobs(), "pdf", author=account().display_name)
    return Response(data, mimetype="application/pdf",
                    headers={"Content-Disposition": f'inline; filename="{incident.slug}.pdf"'})


