"""Database plumbing shared by both domain packages: the declarative base, engines, sessions.

Plain SQLAlchemy 2 (no Flask-SQLAlchemy) so services take a session explicitly and run the same
from the web app, the CLI and tests. SQLite gets foreign keys, WAL and a busy timeout on every
connection, because SQLite leaves all three off by default.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import DateTime, Engine, MetaData, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base with a naming convention, so batch migrations can name constraints."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """Timezone-aware UTC datetimes on every backend.

    SQLite has no timezone type; storing naive UTC and re-attaching UTC on the way out keeps
    comparisons and arithmetic identical on SQLite and PostgreSQL.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("UTCDateTime needs an aware datetime")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: dt.datetime | None, dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


def utcnow() -> dt.datetime:
    """The current time, aware, in UTC."""
    return dt.datetime.now(dt.UTC)


def normalize_url(url: str) -> str:
    """Accept Heroku-style ``postgres://`` and bare ``postgresql://`` URLs; use psycopg 3."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def make_engine(url: str, **kwargs) -> Engine:
    """Create an engine; on SQLite turn on foreign keys, WAL and a busy timeout per connection."""
    url = normalize_url(url)
    engine = create_engine(url, future=True, **kwargs)
    if make_url(url).get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

    return engine


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit (views render after committing)."""
    return sessionmaker(bind=engine, expire_on_commit=False, future=True)


@contextmanager
def transaction(session: Session) -> Iterator[Session]:
    """Commit on success, roll back on any error: a service never leaves half its work behind."""
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
