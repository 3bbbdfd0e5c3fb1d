"""Database plumbing shared by both domain packages: the declarative base, engines, sessions.

Plain SQLAlchemy 2 (no Flask-SQLAlchemy) so services take a session explicitly and run the same
from the web app, the CLI and tests. SQLite gets foreign keys, WAL and a busy timeout on every
connection, because SQLite leaves all three off by default, and a larger page cache.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from psycopg import sql
from sqlalchemy import (
    Column,
    Connection,
    CursorResult,
    DateTime,
    Dialect,
    Engine,
    MetaData,
    Table,
    column,
    create_engine,
    event,
    select,
)
from sqlalchemy import table as table_clause
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.sql import Executable
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

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("UTCDateTime needs an aware datetime")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
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


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine; on SQLite turn on foreign keys, WAL, a busy timeout and a larger page cache."""
    url = normalize_url(url)
    engine = create_engine(url, future=True, **kwargs)
    if make_url(url).get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: object) -> None:
            # A 64 MiB page cache (the default is 2 MiB): a large import's random inserts into the
            # unique index otherwise spill to the WAL again and again.
            for pragma in ("foreign_keys=ON", "busy_timeout=10000", "journal_mode=WAL", "cache_size=-65536"):
                dbapi_connection.execute(f"PRAGMA {pragma}")

    return engine


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit (views render after committing)."""
    return sessionmaker(bind=engine, expire_on_commit=False, future=True)


def changed_rows(session: Session, statement: Any) -> int:
    """Run an UPDATE or DELETE and return how many rows it changed (a compare-and-set's answer)."""
    return cast(CursorResult[Any], session.execute(statement)).rowcount or 0


def columns(session: Session, stmt: Executable, names: Sequence[str]) -> dict[str, tuple]:
    """The result of a Core ``stmt`` column-wise, ``{name: values}``, ready for ``pandas.DataFrame``.

    Run on the session's connection (plain rows, no ORM loading step) and turned into columns at
    once: pandas builds a frame from row objects one attribute probe at a time (a second for
    20,000 rows), from columns in milliseconds.
    """
    rows = session.connection().execute(stmt).all()
    return dict(zip(names, zip(*rows, strict=True) if rows else [()] * len(names), strict=True))


@contextmanager
def transaction(session: Session) -> Iterator[Session]:
    """Commit on success, roll back on any error: a service never leaves half its work behind."""
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise


def insert_new_rows(session: Session, table: Table, column_names: Sequence[str], rows: Iterable[tuple[Any, ...]],
                    conflict: Sequence[str], order_by: str | None = None) -> None:
    """Insert ``rows`` (tuples in ``column_names`` order), skipping those that clash on ``conflict``.

    The values go to the driver as they are (no per-value type hooks, which cost seconds per
    100,000 rows): give them in the form the backend stores, e.g. times as UTC text. The unique
    constraint decides, so two concurrent loads of overlapping data cannot duplicate a row. On
    PostgreSQL the rows stream through COPY (``write_row``) into a temporary table, then one
    ``INSERT … SELECT … ON CONFLICT DO NOTHING`` (ordered by ``order_by``, so ids follow the input);
    elsewhere one Core ``INSERT … ON CONFLICT DO NOTHING`` executemany does it.
    """
    names = list(column_names)
    if session.get_bind().dialect.name != "postgresql":
        untyped = table_clause(table.name, *(column(n) for n in names))
        records = [dict(zip(names, row, strict=True)) for row in rows]
        if records:
            session.execute(sqlite.insert(untyped).on_conflict_do_nothing(index_elements=list(conflict)), records)
        return
    staging = Table(f"staging_{uuid.uuid4().hex[:12]}", MetaData(),
                    *(Column(n, table.c[n].type) for n in names), prefixes=["TEMPORARY"])
    connection = session.connection()
    staging.create(connection)
    _copy_rows(connection, staging.name, names, rows)
    query = select(*staging.c)
    if order_by is not None:
        query = query.order_by(staging.c[order_by])
    session.execute(postgresql.insert(table).from_select(names, query)
                    .on_conflict_do_nothing(index_elements=list(conflict)))
    staging.drop(connection)


def _copy_rows(connection: Connection, name: str, column_names: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> None:
    """The one place that reaches below SQLAlchemy: psycopg's COPY, fed row by row."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(name), sql.SQL(", ").join(map(sql.Identifier, column_names)))
    # A live connection always has its driver's connection; SQLAlchemy types it as optional.
    driver = cast(Any, connection.connection.driver_connection)
    with driver.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
