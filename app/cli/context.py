"""What a CLI command gets instead of a Flask app: the settings, one session and the blob store.

Commands do not build the app nor migrate the database (``hourtab db upgrade`` and ``hourtab
serve`` do); a database whose schema is behind the code is refused with the command to run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.extensions import blobs_from_settings
from hourtab.core.blobs import BlobStore
from hourtab.core.db import make_engine, make_sessionmaker

if TYPE_CHECKING:
    from flask import Flask


@dataclass(frozen=True)
class CliContext:
    settings: dict[str, Any]
    session: Session
    blobs: BlobStore

    def public_url(self, token: str | None) -> str | None:
        return f"{self.settings['PUBLIC_URL']}/h/{token}" if token else None


def settings() -> dict[str, Any]:
    """The same settings the app reads, from the environment (``HOURTAB_*``)."""
    from app.config import from_environment

    return from_environment()


def schema_is_current(engine: Engine) -> bool:
    """True when the database is at the migrations' head revision(s)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from app.migrate import alembic_config

    heads = set(ScriptDirectory.from_config(alembic_config(str(engine.url))).get_heads())
    with engine.connect() as connection:
        return set(MigrationContext.configure(connection).get_current_heads()) == heads


@contextmanager
def cli_session() -> Iterator[CliContext]:
    """Settings, one session on the configured database, and the blob store; closed on exit."""
    cfg = settings()
    engine = make_engine(str(cfg["DATABASE_URL"]))
    try:
        if not schema_is_current(engine):
            raise click.ClickException("The database schema is not up to date; run `hourtab db upgrade` first.")
        session = make_sessionmaker(engine)()
        try:
            yield CliContext(cfg, session, blobs_from_settings(cfg))
        finally:
            session.close()
    finally:
        engine.dispose()


@contextmanager
def queue_app(settings: dict[str, str] | None = None) -> Iterator[Flask]:
    """The whole app, for the commands that hand work to the job queue or consume it: the queue's
    job handlers live on the app. Building it migrates nothing. ``settings`` (``HOURTAB_*``) stand in
    for the environment's."""
    from app import create_app

    app = create_app(settings)
    with app.app_context():
        yield app
