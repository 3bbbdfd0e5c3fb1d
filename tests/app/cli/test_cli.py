"""The ``hourtab`` console script: help, accounts, migrations and ``serve`` under gunicorn."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from app.cli import cli
from tests.helpers.servers import free_port


@pytest.fixture
def cli_env(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    return {"HOURTAB_DATA_DIR": str(tmp_path / "data"), "HOURTAB_DATABASE_URL": database_url}


def test_help_lists_the_commands():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in ("serve", "db", "user"):
        assert re.search(rf"^\s+{name}\s", result.output, re.M), name
    for sub in (["serve"], ["db", "upgrade"], ["user", "create"], ["user", "set-plan"]):
        assert CliRunner().invoke(cli, [*sub, "--help"]).exit_code == 0


def test_user_create_and_set_plan(cli_env):
    runner = CliRunner()
    r = runner.invoke(cli, ["user", "create", "Pat@Example.com", "--password-stdin"],
                      input="a long enough password\n")
    assert r.exit_code == 0, r.output
    assert "pat@example.com (free plan" in r.output
    r = runner.invoke(cli, ["user", "create", "pat@example.com", "--password-stdin"], input="another password!\n")
    assert r.exit_code == 2 and "already exists" in r.output and "Traceback" not in r.output
    r = runner.invoke(cli, ["user", "set-plan", "pat@example.com", "pro"])
    assert r.exit_code == 0 and "pro plan" in r.output
    r = runner.invoke(cli, ["user", "set-plan", "nobody@example.com", "pro"])
    assert r.exit_code == 2 and "No account" in r.output
    engine = create_engine(cli_env["HOURTAB_DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as c:
        assert c.execute(text("SELECT plan FROM accounts")).scalars().all() == ["pro"]
    engine.dispose()


def test_user_create_short_password_is_a_clean_error(cli_env):
    r = CliRunner().invoke(cli, ["user", "create", "x@example.com", "--password-stdin"], input="short\n")
    assert r.exit_code == 2 and "at least 10 characters" in r.output


def test_db_upgrade_is_idempotent(cli_env):
    runner = CliRunner()
    assert runner.invoke(cli, ["db", "upgrade"]).exit_code == 0
    r = runner.invoke(cli, ["db", "upgrade"])
    assert r.exit_code == 0 and "up to date" in r.output


@pytest.mark.slow
def test_serve_runs_gunicorn_with_demo_login(tmp_path):
    port = free_port()
    env = {**os.environ, "HOURTAB_DATA_DIR": str(tmp_path)}
    env.pop("HOURTAB_DATABASE_URL", None)
    env.pop("DATABASE_URL", None)
    hourtab = Path(sys.executable).with_name("hourtab")
    proc = subprocess.Popen([str(hourtab), "serve", "--port", str(port), "--workers", "1", "--demo"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        health = None
        # Up, and the demo's sample data loaded by the consumer serve started (no job left waiting).
        while time.monotonic() < deadline and not (health and health["queue"]["consumers"]
                                                   and not health["queue"]["waiting"]):
            try:
                health = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read())
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.5)
        assert health is not None and (health["status"], health["database"]) == ("ok", "ok"), health
        assert health["queue"]["consumers"] == 1 and health["queue"]["waiting"] == 0, health
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        output = proc.communicate(timeout=30)[0]
    assert re.search(r"Demo login: \S+@\S+ / \S{12,}", output), output
    assert "gunicorn" in output.lower() or "Booting worker" in output


def test_worker_check_exits_1_while_jobs_wait_with_no_consumer_or_too_long(cli_env):
    import datetime as dt

    from sqlalchemy import update

    from hourtab.core import accounts
    from hourtab.core.db import make_engine, make_sessionmaker, utcnow
    from hourtab.core.jobs import Job, consumer_seen, create_job

    runner = CliRunner()
    r = runner.invoke(cli, ["worker", "--check"])
    assert r.exit_code == 0 and json.loads(r.stdout)["waiting"] == 0
    engine = make_engine(cli_env["HOURTAB_DATABASE_URL"])
    with make_sessionmaker(engine)() as s:
        account = accounts.create_account(s, "ops@example.com", "a long enough password")
        job = create_job(s, account.id, "csv_import", {})
        s.execute(update(Job).where(Job.id == job.id).values(updated_at=utcnow() - dt.timedelta(seconds=100)))
        s.commit()
        r = runner.invoke(cli, ["worker", "--check"])
        assert r.exit_code == 1 and json.loads(r.stdout)["stalled"] is True
        assert r.stderr == "Queue unhealthy: 1 job(s) waiting and no consumer seen in the last 60 s.\n"
        consumer_seen(s, "worker-host:4242", 2)
        s.commit()
    assert runner.invoke(cli, ["worker", "--check"]).exit_code == 0           # waited 100 s of 300
    r = runner.invoke(cli, ["worker", "--check", "--max-wait", "60"])
    assert r.exit_code == 1 and re.fullmatch(r"Queue unhealthy: a job has waited 1\d\d s \(more than 60 s\)\.\n",
                                             r.stderr)
    engine.dispose()
