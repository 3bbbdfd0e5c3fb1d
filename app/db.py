"""One engine per app and one session per request, closed at teardown."""

from __future__ import annotations

from flask import Flask, current_app, g
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from hourtab.db import make_engine, make_sessionmaker


def init_app(app: Flask) -> None:
    engine = make_engine(app.config["DATABASE_URL"])
    app.extensions["hourtab.engine"] = engine
    app.extensions["hourtab.sessionmaker"] = make_sessionmaker(engine)
    app.teardown_appcontext(_close_db)


def engine() -> Engine:
    return current_app.extensions["hourtab.engine"]


def session_factory() -> sessionmaker[Session]:
    return current_app.extensions["hourtab.sessionmaker"]


def get_db() -> Session:
    """The request's session, opened on first use."""
    if "db" not in g:
        g.db = session_factory()()
    return g.db


def _close_db(exc: BaseException | None) -> None:
    db = g.pop("db", None)
    if db is not None:
        if exc is not None:
            db.rollback()
        db.close()
