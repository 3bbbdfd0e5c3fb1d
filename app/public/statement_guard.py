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

import threading
from collections.abc import Callable

from cachetools import TTLCache
from flask import current_app, request

from app.db import get_db
from hourtab import ratelimit
from hourtab.db import transaction
from hourtab.errors import LimitExceeded

RENDER_BUCKET = "public-statement-render"
RENDER_WINDOW_S = 60
DEFAULT_RENDER_LIMIT = 20
CLOSED_TTL_S = 24 * 3600

_closed: TTLCache = TTLCache(maxsize=256, ttl=CLOSED_TTL_S)
_lock = threading.Lock()


def charge_render() -> None:
    """Count one expensive render for this address; ``LimitExceeded`` (429) past the limit."""
    db = get_db()
    limit = int(current_app.config.get("PUBLIC_RENDER_LIMIT", DEFAULT_RENDER_LIMIT))
    keys = [f"ip:{request.remote_addr}"]
    with transaction(db):
        attempt = ratelimit.take(db, RENDER_BUCKET, keys, RENDER_WINDOW_S)
    try:
        ratelimit.admit(db, RENDER_BUCKET, keys, limit, RENDER_WINDOW_S)
    except LimitExceeded:
        with transaction(db):
            ratelimit.release(db, attempt)
        raise


def closed_statement(key: tuple, render: Callable[[], object]):
    """The cached rendering for ``key`` (a closed period's statement), rendering it once if absent."""
    with _lock:
        hit = _closed.get(key)
    if hit is not None:
        return hit
    value = render()
    with _lock:
        _closed[key] = value
    return value


def clear() -> None:
    with _lock:
        _closed.clear()
