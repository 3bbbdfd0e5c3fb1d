"""The one place where exceptions become HTTP responses: HTML pages, or JSON for API clients."""

from __future__ import annotations

import logging

from flask import Flask, Response, g, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from hourtab.core.errors import (
    Conflict,
    InvalidInput,
    LimitReached,
    NotFound,
    PayloadTooLarge,
    StorageFull,
    Unauthorized,
    Unavailable,
    storage_full,
)
from hourtab.retainers.errors import PlanLimitReached
from hourtab.sync.errors import SyncError

log = logging.getLogger(__name__)

#: The kernel's error kinds and the status each maps to; the most specific class wins (MRO order).
#: Domain errors (timesheets, retainers, incidents) subclass a kind and need no entry of their own.
STATUS_BY_ERROR: dict[type[Exception], int] = {
    PlanLimitReached: 403,  # waiting does not help, unlike a rate limit
    SyncError: 502,  # the tracker's API failed us, not the request
    PayloadTooLarge: 413,
    InvalidInput: 400,
    Unauthorized: 401,
    NotFound: 404,
    Conflict: 409,
    LimitReached: 429,
    Unavailable: 501,
    StorageFull: 507,
}


def wants_json() -> bool:
    if request.path.startswith("/api/") or request.path.endswith(".json"):
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json" and request.accept_mimetypes[best] > request.accept_mimetypes["text/html"]


def status_for(error: Exception) -> int | None:
    for cls in type(error).__mro__:
        if cls in STATUS_BY_ERROR:
            return STATUS_BY_ERROR[cls]
    return None


def retry_headers(error: Exception) -> dict[str, str]:
    retry = getattr(error, "retry_after", None)
    return {"Retry-After": str(retry)} if retry else {}


def error_headers(error: Exception) -> dict[str, str]:
    """What an error asks the response to say: when to retry, and how to authenticate (a refused
    API token's ``challenge``, RFC 6750)."""
    headers = retry_headers(error)
    challenge = getattr(error, "challenge", None)
    if challenge:
        headers["WWW-Authenticate"] = challenge
    return headers


def form_status(error: Exception | None = None) -> tuple[int, dict[str, str]]:
    """Status and headers of a re-rendered form page: the domain error's own, 400 for a POST
    whose fields were refused, 200 for a GET (a successful POST redirects before this)."""
    if error is not None:
        return status_for(error) or 500, retry_headers(error)
    return (400 if request.method == "POST" else 200), {}


def render_error(status: int, title: str, message: str,
                 headers: dict[str, str] | None = None) -> tuple[Response | str, int, dict[str, str]]:
    response: Response | str
    if wants_json():
        response = jsonify({"error": title, "message": message, "status": status})
    else:
        response = render_template("errors/error.html", status=status, title=title, message=message)
    return response, status, headers or {}


def init_app(app: Flask) -> None:
    @app.errorhandler(CSRFError)
    def _csrf(error: CSRFError) -> ResponseReturnValue:
        return render_error(400, "Bad request", "The form was missing its security token or it expired. "
                            "Reload the page and try again.")

    @app.errorhandler(HTTPException)
    def _http(error: HTTPException) -> ResponseReturnValue:
        if error.code and error.code >= 500:
            _rollback()
        titles = {404: "Not found", 413: "Too large", 405: "Method not allowed"}
        message = {
            404: "There is nothing at this address.",
            413: "That upload is larger than this server accepts.",
        }.get(error.code or 0, error.description or "")
        return render_error(error.code or 500, titles.get(error.code or 0, error.name), message)

    @app.errorhandler(Exception)
    def _any(error: Exception) -> ResponseReturnValue:
        _rollback()
        status = status_for(error)
        if status is None and storage_full(error):   # rolled back above: nothing half-written is kept
            return render_error(507, "Storage full", str(StorageFull()))
        if status is None:
            log.exception("unhandled error on %s", request.path)
            return render_error(500, "Server error", "Something went wrong on our side; nothing was saved.")
        return render_error(status, _title(status), str(error), error_headers(error))


def _title(status: int) -> str:
    return {400: "Bad request", 401: "Unauthorized", 404: "Not found", 409: "Conflict", 413: "Too large",
            429: "Too many requests", 501: "Not available", 507: "Storage full"}.get(status, "Error")


def _rollback() -> None:
    db = g.get("db")
    if db is not None:
        db.rollback()
