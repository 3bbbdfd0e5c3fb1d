"""/api/me: who the session belongs to (a smoke test for API auth and JSON errors)."""

from __future__ import annotations

from flask import jsonify
from flask.typing import ResponseReturnValue
from flask_login import login_required

from app.api import bp
from app.auth import account
from hourtab.retainers import plans


@bp.route("/me")
@login_required
def me() -> ResponseReturnValue:
    a = account()
    return jsonify({"id": a.id, "email": a.email, "plan": a.plan, "retainer_limit": plans.retainer_limit(a)})
