"""Helpers the CLI commands share: an app context and a session, and domain errors as exit codes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click
from flask import Flask
from sqlalchemy.orm import Session

from hourtab.errors import HourTabError
from incidents.errors import IncidentsError


@contextmanager
def app_session(migrate: bool = True) -> Iterator[tuple[Flask, Session]]:
    """An app built from the environment, its database migrated, and one session."""
    from app import create_app
    from app.migrate import upgrade

    app = create_app()
    if migrate:
        upgrade(app.config["DATABASE_URL"])
    with app.app_context():
        session = app.extensions["hourtab.sessionmaker"]()
        try:
            yield app, session
        finally:
            session.close()


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the domain's typed errors into a clean ``Error: …`` and exit status 1."""
    try:
        yield
    except (HourTabError, IncidentsError) as e:
        raise click.ClickException(str(e)) from e
