"""What an app builds once and shares between requests: engine and sessions, blobs, page cache.

Each lives in ``app.extensions`` under a ``hourtab.*`` key, so two apps in one process (tests)
never share them. Views reach them through the accessors below.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from cachetools import TTLCache
from flask import Flask, current_app
from sqlalchemy.engine import make_url

from hourtab.core.blobs import BlobStore, blob_store
from hourtab.core.db import make_engine, make_sessionmaker, normalize_url
from hourtab.core.errors import LimitReached
from hourtab.sync.limits import Limits
from hourtab.sync.token_box import TokenBox

#: Rendered public pages kept per app; entries expire even when nothing changed (the forecast moves).
PAGE_CACHE_SIZE = 256
PAGE_CACHE_TTL_S = 300
#: A closed period's statement changes only with the retainer's revision, so it is kept for a day.
CLOSED_STATEMENT_TTL_S = 24 * 3600


class PageCache:
    """Rendered responses of one app under a TTL; cachetools caches are not thread-safe, hence the lock."""

    def __init__(self, size: int = PAGE_CACHE_SIZE, ttl: float = PAGE_CACHE_TTL_S) -> None:
        self._items: TTLCache = TTLCache(maxsize=size, ttl=ttl)
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            return self._items.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._items[key] = value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def init_app(app: Flask) -> None:
    cfg = app.config
    engine = make_engine(cfg["DATABASE_URL"], **pool_room(cfg["DATABASE_URL"], cfg["WORKER_THREADS"]))
    app.extensions["hourtab.engine"] = engine
    app.extensions["hourtab.sessionmaker"] = make_sessionmaker(engine)
    app.extensions["hourtab.blobs"] = blobs_from_settings(cfg)
    app.extensions["hourtab.page_cache"] = PageCache()
    app.extensions["hourtab.closed_statements"] = PageCache(ttl=CLOSED_STATEMENT_TTL_S)
    app.extensions["hourtab.render_budget"] = RenderBudget()
    app.extensions["hourtab.tokens"] = token_box(cfg)


def pool_room(url: str, threads: int) -> dict[str, int]:
    """Pool sizes for ``threads`` jobs at once. A running job holds its session's connection while it
    reads or writes, and briefly opens others (its lease's heartbeat, its progress, a sync's "was the
    connection paused?"); SQLAlchemy's default (5 kept, 15 at most) would make 8 threads wait on the
    pool. Kept connections are opened only when used, so web processes pay nothing for the room."""
    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        return {}    # one connection per thread by design (SingletonThreadPool)
    return {"pool_size": max(5, threads + 2), "max_overflow": max(10, 2 * threads)}


class RenderBudget:
    """Expensive public renders per public link in a sliding window, counted in this worker's
    memory: a GET must not write to the database, and a lost count only errs towards rendering."""

    def __init__(self, window_s: float = 60.0, addresses: int = 10_000) -> None:
        self.window_s = window_s
        self._times: TTLCache = TTLCache(maxsize=addresses, ttl=window_s)
        self._lock = threading.Lock()

    def charge(self, address: str, limit: int) -> None:
        """Count one render for ``address`` (a link); ``LimitReached`` (with ``retry_after``) past ``limit``."""
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._times.get(address, ()) if now - t < self.window_s]
            if len(recent) >= limit:
                retry = max(1, int(self.window_s - (now - recent[0])) + 1)
                raise LimitReached(f"Too many statement downloads. Try again in {retry} s.", retry_after=retry)
            self._times[address] = [*recent, now]

    def count(self, address: str) -> int:
        now = time.monotonic()
        with self._lock:
            return sum(1 for t in self._times.get(address, ()) if now - t < self.window_s)


def blobs_from_settings(settings: Mapping[str, Any]) -> BlobStore:
    """The blob store the settings name; the app and the CLI both build theirs here."""
    return blob_store(Path(settings["DATA_DIR"]), settings.get("BLOB_URL", ""),
                      settings.get("BLOB_ENDPOINT_URL", ""))


def token_box(settings: Mapping[str, Any]) -> TokenBox:
    """What seals trackers' API tokens (HOURTAB_ENCRYPTION_KEY, else derived from the secret key)."""
    return TokenBox.from_settings(str(settings.get("ENCRYPTION_KEY") or ""), str(settings["SECRET_KEY"]))


def sync_limits(settings: Mapping[str, Any]) -> Limits:
    """Where tracker connections may go and what each request and sync may spend (HOURTAB_SYNC_*)."""
    return Limits.from_settings(settings)


def tokens() -> TokenBox:
    """The app's token box."""
    return current_app.extensions["hourtab.tokens"]


def blobs() -> BlobStore:
    """The app's blob store (a local folder or an S3 bucket, from HOURTAB_BLOB_URL)."""
    return current_app.extensions["hourtab.blobs"]


def page_cache() -> PageCache:
    """The app's cache of rendered public pages."""
    return current_app.extensions["hourtab.page_cache"]


def render_budget() -> RenderBudget:
    """The app's per-address budget of expensive public renders."""
    return current_app.extensions["hourtab.render_budget"]


def closed_statements() -> PageCache:
    """The app's cache of closed periods' statement PDFs."""
    return current_app.extensions["hourtab.closed_statements"]
