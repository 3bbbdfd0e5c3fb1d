"""/ and /dashboard: the consultant's home, which later features fill with their panels."""

from __future__ import annotations

from flask import redirect, render_template, url_for
from flask_login import current_user, login_required

from app.auth import account
from app.consultant import bp


@bp.route("/")
def home():
    if current_user.is_authenticated:
        return redirect(url_for("consultant.dashboard"))
    return redirect(url_for("consultant.login"))


@bp.route("/dashboard")
@login_required
def dashboard():
    return render_template("consultant/dashboard.html", account=account(), panels=[])
