"""JSON API under /api/ for the consultant's own scripts (session cookie auth)."""

from flask import Blueprint

bp = Blueprint("api", __name__, url_prefix="/api")

from app.api import me  # noqa: E402,F401  (registers the views)
