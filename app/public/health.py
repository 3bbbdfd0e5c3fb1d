"""/healthz: for load balancers, the quickstart check and monitoring.

``status`` is "ok", "degraded" when jobs wait and no queue consumer has been seen within a
lease, or a consumer is busy with a job past its kind's budget (``queue.busy_past_budget``; the web
app still serves: HTTP 200), or "error" when the database is unreachable (503).
``queue`` says how many consumers were seen in the last lease and how long the longest waiting
job has waited (``hourtab worker --check`` turns the same figures into an exit code).
"""

from __future__ import annotations

from flask import current_app, jsonify
from flask.typing import ResponseReturnValue
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.db import engine, get_db
from app.public import bp
from hourtab.core.jobs import queue_health


@bp.route("/healthz")
def healthz() -> ResponseReturnValue:
    try:
        with engine().connect() as conn:
            conn.execute(text("SELECT 1"))
        kinds = current_app.extensions["hourtab.queue"].kinds
        health = queue_health(get_db(), current_app.config["JOB_LEASE_S"],
                              budgets={name: kind.budget_s for name, kind in kinds.items()})
    except SQLAlchemyError:
        return jsonify({"status": "error", "database": "error"}), 503
    response = jsonify({"status": "degraded" if health.degraded else "ok", "database": "ok",
                        "queue": health.as_dict()})
    response.headers["Cache-Control"] = "no-store"
    return response
