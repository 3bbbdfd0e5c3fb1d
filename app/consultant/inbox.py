"""/inbox: the account's unassigned work by client and project, each group one action from a retainer."""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required

from app.auth import account
from app.consultant import bp
from app.consultant.changes import Applied, run_change
from app.consultant.retainers import ActionForm
from app.db import get_db
from app.public.hours import now as _now
from hourtab.core.errors import InvalidInput
from hourtab.retainers import service
from hourtab.retainers.inbox import add_to_rules, inbox


@bp.route("/inbox")
@login_required
def inbox_page() -> ResponseReturnValue:
    db = get_db()
    me = account()
    active = [r for r in service.list_retainers(db, me) if r.active]
    return render_template("consultant/inbox.html", inbox=inbox(db, me.id), retainers=active, action=ActionForm())


@bp.route("/inbox/add", methods=["POST"])
@login_required
def inbox_add() -> ResponseReturnValue:
    """Add a group's client (or project) to the chosen retainer's rules: previewed where it revises history."""
    if not ActionForm().validate_on_submit():
        abort(400)
    client, project = request.form.get("client", ""), request.form.get("project", "")
    retainer_id = request.form.get("retainer", "")
    if not retainer_id.isdigit():
        flash("Choose the retainer these entries belong to.")
        return redirect(url_for("consultant.inbox_page"))
    try:
        outcome = run_change(lambda db, me: add_to_rules(db, me, int(retainer_id), client, project, now=_now()),
                             title=f"Count {client or project} against this retainer?",
                             cancel=url_for("consultant.inbox_page"))
    except InvalidInput as e:
        flash(str(e))
        return redirect(url_for("consultant.inbox_page"))
    if not isinstance(outcome, Applied):
        return outcome
    arrived = sum(m.entries for m in outcome.preview.moves if m.target == int(retainer_id) and m.source != m.target)
    flash(f"{outcome.result.name} now counts {client or project}: {arrived} entr{'y' if arrived == 1 else 'ies'} "
          f"moved to it. Its rules: {outcome.result.rules().describe()}.")
    return redirect(url_for("consultant.inbox_page"))
