"""/healthz: for load balancers and the quickstart check."""

from __future__ import annotations

from flask import jsonify
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.db import engine
from app.public import bp


@bp.route("/healthz")
def healthz():
    try:
        with engine().connect() as conn:
            conn.execute(text("SELECT 1"))
    except SQLAlchemyError:
        return jsonify({"status": "error", "database": "error"}), 503
    return jsonify({"status": "ok", "database": "ok"})
