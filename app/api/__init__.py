"""JSON under /api/: ``/api/me`` for the consultant's session, ``/api/v1`` for their tools (Bearer tokens).

The blueprint is exempt from the app-wide CSRF check because ``bearer.check_api_request`` decides for
each request: a request under /api/v1 is authenticated by its token alone (never by the session
cookie, so it needs no CSRF token), and any other unsafe request here is CSRF-checked as before.
"""

from flask import Blueprint

from app.security import csrf

bp = Blueprint("api", __name__, url_prefix="/api")
csrf.exempt(bp)

from app.api import bearer, me, v1  # noqa: E402,F401  (registers the views)

bp.before_request(bearer.check_api_request)
