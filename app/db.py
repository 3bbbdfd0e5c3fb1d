"""One session per request, from the app's sessionmaker (``app.extensions``), closed at teardown."""

from __future__ import annotations

from flask import Flask, current_app, g
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker


def init_app(app: Flask) -> None:
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
