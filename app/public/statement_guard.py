"""What keeps statement PDFs from slowing every client: fast misses, a long cache, a render budget.

A statement is the one public response that costs a full ledger and a WeasyPrint render (tens of
milliseconds or more). Three rules keep a scanner or an impatient client from taking the workers
away from everyone else:

* a month in which no period of the retainer starts is a 404 found from the terms alone, and counts
  as a miss against the address like an unknown token;
* statements of closed periods cannot change until the retainer's revision or entries do, so they
  are kept (per worker) for a day rather than re-rendered with the page cache's short lifetime;
* actual renders (never cached hits) are limited per public link, with HTTP 429 and ``Retry-After``
  past the limit. A link is one client's, and a client's bookkeeping script fetches a few years of
  statements in a row: the limit lets a burst of that size through, and a link (only its owner
  and whoever it was shared with know it) cannot take more. The count is kept in this worker's
  memory, not the database, so that a GET never writes; with N workers a link can get up to N
  times the limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import current_app

from app.extensions import closed_statements, render_budget

T = TypeVar("T")

#: Renders a minute per public link: five years of monthly statements downloaded at once fit.
DEFAULT_RENDER_LIMIT = 60


def charge_render(link: str) -> None:
    """Count one expensive render for the public link ``link`` (a retainer's id, never its token);
    ``LimitReached`` (429) past the limit."""
    limit = int(current_app.config.get("PUBLIC_RENDER_LIMIT", DEFAULT_RENDER_LIMIT))
    render_budget().charge(link, limit)


def closed_statement(key: tuple, render: Callable[[], T]) -> T:
    """The cached rendering for ``key`` (a closed period's statement), rendering it once if absent."""
    cache = closed_statements()
    hit = cache.get(key)
    if hit is None:
        hit = render()
        cache.put(key, hit)
    return hit
