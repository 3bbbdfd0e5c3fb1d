"""The app factory, configuration, health check, error pages and security headers."""

from __future__ import annotations

import os
import stat

import pytest
from flask import abort
from sqlalchemy import text

from app import create_app
from app.db import get_db


def test_factory_defaults_to_sqlite_in_data_dir_with_generated_key(tmp_path, monkeypatch):
    for var in ("HOURTAB_DATABASE_URL", "DATABASE_URL", "HOURTAB_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path))
    first = create_app()
    assert first.config["DATABASE_URL"] == f"sqlite:///{tmp_path / 'hourtab.db'}"
    key_file = tmp_path / "secret_key"
    assert first.config["SECRET_KEY"] == key_file.read_text().strip()
    assert len(first.config["SECRET_KEY"]) >= 40
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    # generated once: a second start keeps sessions valid
    assert create_app().config["SECRET_KEY"] == first.config["SECRET_KEY"]


def test_environment_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("HOURTAB_DATABASE_URL", raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgres://u@db.internal/x")
    monkeypatch.setenv("HOURTAB_SECRET_KEY", "s" * 50)
    monkeypatch.setenv("HOURTAB_HTTPS", "1")
    app = create_app()
    assert app.config["SECRET_KEY"] == "s" * 50
    assert app.config["SESSION_COOKIE_SECURE"] is True
    assert str(app.extensions["hourtab.engine"].url).startswith("postgresql+psycopg://u@db.internal/x")


def test_sqlite_runs_with_foreign_keys_and_wal(app):
    if not app.config["DATABASE_URL"].startswith("sqlite"):
        pytest.skip("SQLite pragmas")
    with app.app_context():
        db = get_db()
        assert db.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert db.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_healthz_ok(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json == {
        "status": "ok", "database": "ok",
        "queue": {"consumers": 0, "waiting": 0, "running": 0, "oldest_waiting_s": None, "stalled": False,
                  "busy_past_budget": []}}


def test_healthz_503_when_database_unreachable(tmp_path):
    app = create_app({"HOURTAB_DATA_DIR": str(tmp_path),
                      "HOURTAB_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"})
    r = app.test_client().get("/healthz")
    assert r.status_code == 503 and r.json == {"status": "error", "database": "error"}


def test_security_headers_on_every_response(client):
    for url in ("/login", "/healthz", "/no-such-page"):
        r = client.get(url)
        csp = r.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"]


def test_404_is_html_for_pages_and_json_for_api(client):
    r = client.get("/no-such-page")
    assert r.status_code == 404 and "text/html" in r.content_type and "Not found" in r.get_data(as_text=True)
    r = client.get("/api/no-such-thing")
    assert r.status_code == 404 and r.json["status"] == 404
    r = client.get("/no-such-page", headers={"Accept": "application/json"})
    assert r.status_code == 404 and r.json["error"] == "Not found"


def test_api_requires_login_with_json_401(client, logged_in):
    assert logged_in.get("/api/me").json["email"] == "consultant@example.com"
    fresh = client.application.test_client()
    r = fresh.get("/api/me")
    assert r.status_code == 401 and r.json["status"] == 401


def test_500_rolls_back_the_session_and_hides_details(app):
    from hourtab.core.accounts import Account

    @app.route("/boom")
    def boom():
        db = get_db()
        db.add(Account(email="half@example.com", password_hash="x"))
        db.flush()
        raise RuntimeError("secret internals")

    @app.route("/count")
    def count():
        return str(get_db().query(Account).count())

    @app.route("/teapot")
    def teapot():
        abort(418)

    c = app.test_client()
    r = c.get("/boom")
    assert r.status_code == 500 and "secret internals" not in r.get_data(as_text=True)
    assert c.get("/count").get_data(as_text=True) == "0"
    assert c.get("/boom", headers={"Accept": "application/json"}).json["status"] == 500
