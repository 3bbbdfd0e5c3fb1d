"""/ (what HourTab is, for a visitor) and /dashboard: the consultant's home, every retainer with its balance."""

from __future__ import annotations

from typing import Any

from flask import redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required

from app.auth import account
from app.consultant import bp
from app.consultant.retainers import balances
from app.db import get_db
from app.demo import demo_page
from hourtab.retainers import plans, service
from hourtab.retainers.inbox import inbox_totals


@bp.route("/")
def home() -> ResponseReturnValue:
    if current_user.is_authenticated:
        return redirect(url_for("consultant.dashboard"))

    return render_template("home.html", demo_page=demo_page(get_db()))


@bp.route("/dashboard")
@login_required
def dashboard() -> ResponseReturnValue:
    db = get_db()
    me = account()
    rows = balances(db, service.list_retainers(db, me))
    panels: list[dict[str, Any]] = [{"template": "consultant/retainers/_panel.html", "rows": rows, "plan_full": service.plan_full(db, me)}]
    unassigned = inbox_totals(db, me.id)
    if unassigned.entries:
        panels.insert(0, {"template": "consultant/_inbox_panel.html", "inbox": unassigned})
    return render_template("consultant/dashboard.html", account=me, panels=panels,
                           retainer_limit=plans.retainer_limit(me))
