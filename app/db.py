"""One session per request, from the app's sessionmaker (``app.extensions``), closed at teardown."""

from __future__ import annotations

from flask import Flask, current_app, g
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker
from werkzeug.routing import IntegerConverter

#: The largest id the ``Integer`` primary keys hold on every backend (PostgreSQL's int4).
MAX_ID = 2**31 - 1


def at_most(n: int) -> str:
    """A regular expression for the decimal numbers 0..``n`` (no sign, no leading zeros)."""
    digits = str(n)
    if len(digits) == 1:
        return f"[0-{n}]"
    parts = ["0", f"[1-9][0-9]{{0,{len(digits) - 2}}}"]             # fewer digits than n
    for i, d in enumerate(digits):                                  # as many, smaller at digit i
        low = 1 if i == 0 else 0
        if int(d) - 1 >= low:
            parts.append(f"{digits[:i]}[{low}-{int(d) - 1}][0-9]{{{len(digits) - i - 1}}}")
    return "|".join([*parts, digits])


class IdConverter(IntegerConverter):
    """``<int:…>`` in a URL is a row id: a number no row can have matches no route (a 404), rather
    than reaching the database (PostgreSQL refuses 2**31 for an integer, SQLite 2**63).

    The bound is in the pattern, not only in ``to_python``: Werkzeug answers 405 rather than 404
    when a value its pattern matched fails conversion on a URL that has a rule for another method.
    """

    regex = f"(?:{at_most(MAX_ID)})"


def init_app(app: Flask) -> None:
    """Before any blueprint: its routes' ``<int:…>`` parts are compiled with the id converter."""
    app.url_map.converters["int"] = IdConverter
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
