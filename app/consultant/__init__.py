"""Pages for the logged-in consultant (and the sign-up / log-in pages that lead to them)."""

from flask import Blueprint

bp = Blueprint("consultant", __name__, template_folder=None)

from app.consultant import accounts, dashboard, retainers  # noqa: E402,F401  (registers the views)
from app.consultant import evidence  # noqa: E402,F401
