"""Fixtures shared by every test package: databases on both backends, apps, clients, servers, a browser.

Fixtures only: the functions and constants tests import live in ``tests/helpers/``.

Each backend gets one migrated template database per test session; every test then receives its
own copy (a file copy on SQLite, ``CREATE DATABASE … TEMPLATE`` on PostgreSQL) so tests never
share state and never depend on order.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy.orm import Session

from tests.helpers.browser import CHROMIUM
from tests.helpers.databases import PG_ADMIN_URL, create_pg_database, drop_pg_database, pg_database, pg_url
from tests.helpers.forms import signup
from tests.helpers.mail import Sink, smtp_server
from tests.helpers.servers import serve
from tests.helpers.wandb_sample_runs import ensure_runs

#: The tests' trackers are local servers on loopback: the operator's switch that lets connections reach
#: private and loopback addresses is on for the apps, CLIs and servers the tests start...
os.environ.setdefault("HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS", "1")


#: Fixtures that train real runs with torch: a test using one (even through another fixture) needs
#: the ``torch`` mark, which says so where the test is written and lets ``-m "not torch"`` leave it out.
TORCH_FIXTURES = {"wandb_runs", "pathology_runs", "tiny_run", "freq100_run"}
TORCH_AVAILABLE = all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers"))


@pytest.fixture(autouse=True)
def _local_trackers_reachable(monkeypatch):
    """... and for the domain services the tests call directly (tests of the refusals pass their own)."""
    from hourtab.sync import limits

    monkeypatch.setattr(limits, "DEFAULT", limits.Limits(allow_private=True))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Refuse a test that trains with torch unmarked; skip the marked ones where torch is missing.

    First, so the mark is checked before ``-m`` deselects anything.
    """
    unmarked = [item.nodeid for item in items
                if TORCH_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("torch") is None]
    if unmarked:
        raise pytest.UsageError("These tests train with torch but are not marked torch:\n  " + "\n  ".join(unmarked))
    if not TORCH_AVAILABLE:
        skip = pytest.mark.skip(reason="needs torch and transformers (the repro extra)")
        for item in items:
            if item.get_closest_marker("torch") is not None:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    from app.migrate import upgrade

    path = tmp_path_factory.mktemp("dbtemplate") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    from app.migrate import upgrade

    try:
        name = create_pg_database("hourtab_tpl")
    except Exception as e:  # pragma: no cover - depends on the machine
        pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {e}")
    try:
        upgrade(pg_url(name))
        yield name
    finally:
        drop_pg_database(name)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request, tmp_path) -> Iterator[str]:
    """A freshly migrated, empty database of each backend."""
    if request.param == "sqlite":
        path = tmp_path / "hourtab.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    with pg_database("hourtab_t", template=request.getfixturevalue("pg_template")) as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request, tmp_path) -> Iterator[str]:
    """An empty database of each backend, no migration applied (for migrating from an old revision)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    with pg_database("hourtab_m") as url:
        yield url


@pytest.fixture(scope="session")
def wandb_runs(tmp_path_factory) -> dict:
    """Two real offline runs: ``plain …`` (system metrics sampled every 0.2 s) and ``watched``."""
    return ensure_runs(tmp_path_factory.getbasetemp() / "wandb_runs")


@pytest.fixture
def db_session(database_url) -> Iterator[Session]:
    """A session on a fresh database, for domain service tests."""
    from hourtab.core.db import make_engine, make_sessionmaker

    engine = make_engine(database_url)
    session = make_sessionmaker(engine)()
    try:
        yield session
    finally:
        session.close()
        engine.dispose()


@pytest.fixture
def make_app(database_url, tmp_path) -> Iterator[Callable[..., Flask]]:
    """``make_app(**config)``: an app on the test's database with its data under ``tmp_path``, TESTING on.

    ``config`` adds or overrides settings (``HOURTAB_DATABASE_URL``, ``HOURTAB_DATA_DIR`` included); every
    engine made is disposed at teardown, so no connection outlives the test's database.
    """
    made: list[Flask] = []

    def build(**config) -> Flask:
        from app import create_app

        app = create_app({"HOURTAB_DATA_DIR": str(tmp_path / "data"), "HOURTAB_DATABASE_URL": database_url,
                          "TESTING": True, **config})
        made.append(app)
        return app

    yield build
    for app in made:
        app.extensions["hourtab.engine"].dispose()


@pytest.fixture
def app(make_app) -> Flask:
    return make_app()


@pytest.fixture
def smtp() -> Iterator[tuple[Sink, str]]:
    """A real SMTP server on loopback for the test: ``(sink, smtp://127.0.0.1:port)``."""
    with smtp_server() as server:
        yield server


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def logged_in(client):
    """A client logged in as a fresh consultant (``consultant@example.com``)."""
    response = signup(client)
    assert response.status_code == 302, response.get_data(as_text=True)
    return client


@pytest.fixture
def live_server(app):
    """The test app served over real HTTP on a free loopback port (for the browser tests)."""
    with serve(app) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (no browser download: ``executable_path``)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run scripts/install.sh --test (apt package chromium)")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    yield page
    context.close()
