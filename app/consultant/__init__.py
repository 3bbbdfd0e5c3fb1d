"""Pages for the logged-in consultant (and the sign-up / log-in pages that lead to them)."""

from flask import Blueprint

bp = Blueprint("consultant", __name__, template_folder=None)

from app.consultant import (  # noqa: E402,F401  (registers the views)
    accounts,
    alerts,  # noqa: E402,F401
    connections,  # noqa: E402,F401
    dashboard,
    evidence,  # noqa: E402,F401
    imports,  # noqa: E402,F401
    inbox,  # noqa: E402,F401
    incidents,  # noqa: E402,F401
    invoices,  # noqa: E402,F401
    jobs,  # noqa: E402,F401
    retainers,
    tokens,  # noqa: E402,F401
)
