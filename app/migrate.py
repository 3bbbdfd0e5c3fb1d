"""Alembic from code: ``hourtab db upgrade``, ``hourtab serve`` and the tests all use this."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from hourtab.core.blobs import BlobStore
from hourtab.core.resources import resource_path


def alembic_config(database_url: str, blobs: BlobStore | None = None) -> Config:
    cfg = Config(str(resource_path("alembic.ini")))
    cfg.set_main_option("script_location", str(resource_path("migrations")))
    cfg.attributes["database_url"] = database_url
    if blobs is not None:  # data migrations that move bytes (0016) use it; else the settings' store
        cfg.attributes["blobs"] = blobs
    return cfg


def upgrade(database_url: str, revision: str = "heads", blobs: BlobStore | None = None) -> None:
    """Apply pending migrations (all branches' heads)."""
    command.upgrade(alembic_config(database_url, blobs), revision)
