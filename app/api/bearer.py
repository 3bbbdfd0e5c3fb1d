"""Who a ``/api/v1`` request is: the account of the personal access token in ``Authorization: Bearer``.

Only the header counts under ``/api/v1``; a session cookie there authenticates nothing, so a page
on another site that makes the browser send the consultant's cookie gets a 401, and the forms'
CSRF check is needed only where the cookie is what authenticates. Everywhere else under ``/api``
(cookie-authenticated) the CSRF check runs as it does for every form.

A wrong, malformed or revoked token gets the same 401 with ``WWW-Authenticate: Bearer`` (RFC 6750),
and counts as a miss for the client's address (429 past the limit, as the public pages do); a good
token is rate-limited per token. That bookkeeping (the count, and ``last_used_at`` at most once a
minute) is the one write behind the API's GETs.
"""

from __future__ import annotations

from flask import current_app, g, request

from app.db import get_db
from app.security import csrf
from hourtab.core import apitokens, ratelimit
from hourtab.core.accounts import Account
from hourtab.core.db import transaction
from hourtab.core.errors import LimitReached, Unauthorized

REALM = 'Bearer realm="HourTab API"'
WINDOW_S = 60
CALLS_BUCKET = "api-calls"
MISS_BUCKET = "api-token-miss"
DEFAULT_MISS_LIMIT = 30
#: Endpoints under /api/v1 that anyone may read: the API's own description.
PUBLIC_ENDPOINTS = {"api.v1_openapi"}
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


class BearerRefused(Unauthorized):
    """A request under /api/v1 without a usable token; ``challenge`` is its WWW-Authenticate header."""

    def __init__(self, message: str, challenge: str = REALM) -> None:
        super().__init__(message)
        self.challenge = challenge


def presented_token() -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def check_api_request() -> None:
    """Before every view of the API blueprint: Bearer under /api/v1, the CSRF check elsewhere."""
    if not request.path.startswith("/api/v1/"):
        if request.method not in SAFE_METHODS and current_app.config.get("WTF_CSRF_ENABLED", True):
            csrf.protect()
        return
    if request.endpoint in PUBLIC_ENDPOINTS:
        return
    token = presented_token()
    if token is None:
        raise BearerRefused("This API needs a personal access token: send `Authorization: Bearer <token>` "
                            "(make one on the Settings page or with `hourtab token create`).")
    db = get_db()
    row = apitokens.resolve(db, token)
    if row is None:
        _count_miss()
        raise BearerRefused("The token is wrong or has been revoked.",
                            REALM + ', error="invalid_token", error_description="The token is wrong or revoked"')
    _admit(row)
    account = db.get(Account, row.account_id)
    if account is None:  # deleted between the two reads
        raise BearerRefused("The token is wrong or has been revoked.")
    g.api_token, g.api_account = row, account


def _count_miss() -> None:
    db = get_db()
    keys = [f"ip:{request.remote_addr}"]
    limit = int(current_app.config.get("API_MISS_LIMIT", DEFAULT_MISS_LIMIT))
    with transaction(db):
        ratelimit.check(db, MISS_BUCKET, keys, limit, WINDOW_S)
        ratelimit.record(db, MISS_BUCKET, keys, WINDOW_S)


def _admit(row: apitokens.ApiToken) -> None:
    """Count this call against the token's limit (a refused call does not count), and note the use."""
    db = get_db()
    keys = [f"token:{row.id}"]
    with transaction(db):
        taken = ratelimit.take(db, CALLS_BUCKET, keys, WINDOW_S)
        if apitokens.needs_touch(row):
            apitokens.touch(row)
    try:
        ratelimit.admit(db, CALLS_BUCKET, keys, int(current_app.config["API_RATE_LIMIT"]), WINDOW_S)
    except LimitReached:
        with transaction(db):
            ratelimit.release(db, taken)
        raise


def api_account() -> Account:
    """The account of the request's token (views under /api/v1 run after ``check_api_request``)."""
    return g.api_account


def api_token() -> apitokens.ApiToken:
    return g.api_token
