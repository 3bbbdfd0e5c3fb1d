"""PostgreSQL databases of the tests' own on the server at ``HOURTAB_TEST_PG_URL`` (default: local).

Each test creates its own database and drops it afterwards, so tests never share state.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

PG_ADMIN_URL = os.environ.get("HOURTAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def pg_admin() -> Engine:
    """An engine on the server's maintenance database, outside transactions (CREATE/DROP DATABASE)."""
    return create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")


def pg_url(name: str) -> str:
    """The URL of database ``name`` on the tests' server."""
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def create_pg_database(prefix: str, template: str | None = None) -> str:
    """A new database's name (a copy of ``template`` when given); the caller drops it."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = pg_admin()
    try:
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    finally:
        admin.dispose()
    return name


def drop_pg_database(name: str) -> None:
    admin = pg_admin()
    try:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@contextmanager
def pg_database(prefix: str, template: str | None = None) -> Iterator[str]:
    """The URL of a PostgreSQL database of its own (a copy of ``template`` when given), dropped afterwards."""
    name = create_pg_database(prefix, template)
    try:
        yield pg_url(name)
    finally:
        drop_pg_database(name)
