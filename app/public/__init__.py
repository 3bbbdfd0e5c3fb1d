"""Pages for clients and the world: no login (public hours pages, health check)."""

from flask import Blueprint

bp = Blueprint("public", __name__)

from app.public import (  # noqa: E402,F401  (registers the views)
    alerts,
    health,
    hours,
    incidents,  # noqa: E402,F401
)
