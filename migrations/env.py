"""Alembic environment: batch mode everywhere so one history runs on SQLite and PostgreSQL."""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context

from app.models import metadata
from hourtab.core.db import make_engine

config = context.config
if config.config_file_name and not config.attributes.get("database_url"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def database_url() -> str:
    url = config.attributes.get("database_url") or os.environ.get("HOURTAB_DATABASE_URL") \
        or os.environ.get("DATABASE_URL")
    if not url:
        from app.config import from_environment

        url = str(from_environment()["DATABASE_URL"])
    return url


def run_migrations_offline() -> None:
    context.configure(url=database_url(), target_metadata=metadata, literal_binds=True,
                      render_as_batch=True, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(database_url())
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                          compare_type=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
