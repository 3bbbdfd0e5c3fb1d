"""What keeps statement PDFs from slowing every client: fast misses, a long cache, a render budget.

A statement is the one public response that costs a full ledger and a WeasyPrint render (tens of
milliseconds or more). Three rules keep a scanner or an impatient client from taking the workers
away from everyone else:

* a month in which no period of the retainer starts is a 404 found from the terms alone, and counts
  as a miss against the address like an unknown token;
* statements of closed periods cannot change until the retainer's revision or entries do, so they
  are kept (per worker) for a day rather than re-rendered with the page cache's short lifetime;
* actual renders (never cached hits) are limited per client address, shared by all workers through
  the database, with HTTP 429 and ``Retry-After`` past the limit.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import current_app, request

from app.db import get_db
from app.extensions import closed_statements
from hourtab import ratelimit
from hourtab.db import transaction
from hourtab.errors import LimitReached

RENDER_BUCKET = "public-statement-render"
RENDER_WINDOW_S = 60
DEFAULT_RENDER_LIMIT = 20



def charge_render() -> None:
    """Count one expensive render for this address; ``LimitReached`` (429) past the limit."""
    db = get_db()
    limit = int(current_app.config.get("PUBLIC_RENDER_LIMIT", DEFAULT_RENDER_LIMIT))
    keys = [f"ip:{request.remote_addr}"]
    with transaction(db):
        attempt = ratelimit.take(db, RENDER_BUCKET, keys, RENDER_WINDOW_S)
    try:
        ratelimit.admit(db, RENDER_BUCKET, keys, limit, RENDER_WINDOW_S)
    except LimitReached:
        with transaction(db):
            ratelimit.release(db, attempt)
        raise


def closed_statement(key: tuple, render: Callable[[], object]):
    """The cached rendering for ``key`` (a closed period's statement), rendering it once if absent."""
    cache = closed_statements()
    hit = cache.get(key)
    if hit is None:
        hit = render()
        cache.put(key, hit)
    return hit
