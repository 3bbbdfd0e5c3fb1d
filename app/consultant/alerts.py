"""The retainer page's alert panel: which alerts the retainer sends, and a copy for the consultant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import current_app, flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required

from app.auth import account
from app.consultant import bp
from app.db import get_db
from hourtab.alerts import service as alerts
from hourtab.core.db import transaction

if TYPE_CHECKING:
    from hourtab.retainers.models import Retainer


CHOICES = (("used_80", "80 % of the period's hours used"), ("used_100", "100 % of the period's hours used"),
           ("overage", "Hours beyond the period's allotment"),
           ("period_closed", "Period closed (statement PDF attached)"),
           ("incident_published", "Incident report published"))


@bp.app_context_processor
def _alert_panel() -> dict:
    def alert_panel(retainer: Retainer) -> dict:
        db = get_db()
        confirmed, pending = alerts.subscriber_counts(db, retainer.id)
        return {"settings": alerts.settings_for(db, retainer), "confirmed": confirmed, "pending": pending,
                "choices": CHOICES, "smtp": bool(current_app.config.get("SMTP_URL"))}

    return {"alert_panel": alert_panel}


@bp.route("/retainers/<int:retainer_id>/alerts", methods=["POST"])
@login_required
def retainer_alerts(retainer_id: int) -> ResponseReturnValue:
    db = get_db()
    with transaction(db):
        alerts.save_settings(db, account().id, retainer_id, request.form.getlist("alert"),
                             request.form.get("copy") == "1")
    flash("Alert settings saved.")
    return redirect(url_for("consultant.retainer_detail", retainer_id=retainer_id) + "#alerts")
