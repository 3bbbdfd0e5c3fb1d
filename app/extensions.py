"""What an app builds once and shares between requests: engine and sessions, blobs, page cache.

Each lives in ``app.extensions`` under a ``hourtab.*`` key, so two apps in one process (tests)
never share them. Views reach them through the accessors below.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cachetools import TTLCache
from flask import Flask, current_app

from hourtab.core.blobs import BlobStore, blob_store
from hourtab.core.db import make_engine, make_sessionmaker

#: Rendered public pages kept per app; entries expire even when nothing changed (the forecast moves).
PAGE_CACHE_SIZE = 256
PAGE_CACHE_TTL_S = 300


def init_app(app: Flask) -> None:
    cfg = app.config
    engine = make_engine(cfg["DATABASE_URL"])
    app.extensions["hourtab.engine"] = engine
    app.extensions["hourtab.sessionmaker"] = make_sessionmaker(engine)
    app.extensions["hourtab.blobs"] = blobs_from_settings(cfg)
    app.extensions["hourtab.page_cache"] = TTLCache(maxsize=PAGE_CACHE_SIZE, ttl=PAGE_CACHE_TTL_S)
    # cachetools caches are not thread-safe; gunicorn threads share this lock around every access.
    app.extensions["hourtab.page_cache_lock"] = threading.Lock()


def blobs_from_settings(settings: Mapping[str, Any]) -> BlobStore:
    """The blob store the settings name; the app and the CLI both build theirs here."""
    return blob_store(Path(settings["DATA_DIR"]), settings.get("BLOB_URL", ""),
                      settings.get("BLOB_ENDPOINT_URL", ""))


def blobs() -> BlobStore:
    """The app's blob store (a local folder or an S3 bucket, from HOURTAB_BLOB_URL)."""
    return current_app.extensions["hourtab.blobs"]


def page_cache() -> tuple[TTLCache, threading.Lock]:
    """The app's cache of rendered public pages and the lock that guards it."""
    return current_app.extensions["hourtab.page_cache"], current_app.extensions["hourtab.page_cache_lock"]
