"""An API token never appears in a log line, a page, a job row, an error, an e-mail, the CLI's output or
the database in the clear: every text the sync touches is collected and searched for it."""

from __future__ import annotations

import base64
import logging
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select, text, update

from app.cli import cli
from app.models import metadata
from hourtab.core.db import transaction
from hourtab.core.jobs import Job
from hourtab.sync.models import Connection
from tests.helpers.fake_trackers import Clockify, Toggl, serving
from tests.helpers.forms import post_form
from tests.helpers.servers import free_port
from tests.helpers.sync_runs import at, months

TOKENS = ("tgl_7c41d0a9e2b84f35a61c9d08e7f2b3c4", "tgl_second_51e0c7a3b9d24f6e8a1c", "cfy_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5")


def forms(token: str) -> list[str]:
    """The token and the encodings it travels in (Toggl's basic-auth header)."""
    return [token, base64.b64encode(f"{token}:api_token".encode()).decode()]


@pytest.fixture
def env(database_url, tmp_path, smtp, monkeypatch):
    settings = {"HOURTAB_DATA_DIR": str(tmp_path / "data"), "HOURTAB_DATABASE_URL": database_url,
                "HOURTAB_SMTP_URL": smtp[1], "HOURTAB_PUBLIC_URL": "https://hours.example.com"}
    for k, v in settings.items():
        monkeypatch.setenv(k, v)
    return settings


@pytest.fixture
def app(make_app, env):
    return make_app(**env)


def database_text(app, database_url: str) -> str:
    """Every value of every table, as text; on SQLite also the raw database and WAL files."""
    parts = []
    with app.extensions["hourtab.engine"].connect() as c:
        for table in metadata.sorted_tables:
            for row in c.execute(select(table)):
                parts += [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in row]
    if database_url.startswith("sqlite:///"):
        path = Path(database_url.removeprefix("sqlite:///"))
        for f in (path, path.with_name(path.name + "-wal")):
            if f.exists():
                parts.append(f.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def test_the_token_is_never_written_in_the_clear(app, env, logged_in, smtp, caplog, database_url):
    caplog.set_level(logging.DEBUG)
    sink, _ = smtp
    seen: list[str] = []
    toggl = Toggl(TOKENS[0])
    for i in range(3):
        toggl.add(at(months()[1], 1 + i), 1800, f"Entry {i}")
    clockify = Clockify(TOKENS[2])
    clockify.add(at(months()[1], 4), 900, "Clockify work")
    with serving(toggl=toggl, clockify=clockify) as trackers:
        r = post_form(logged_in, "/account/connections", {"tracker": "toggl", "token": TOKENS[0] + "x",
                                                          "api_url": trackers.url})
        seen.append(r.get_data(as_text=True))              # refused at connect: the form shows why
        r = post_form(logged_in, "/account/connections", {"tracker": "toggl", "token": TOKENS[0],
                                                          "api_url": trackers.url})
        seen.append(logged_in.get(r.headers["Location"], follow_redirects=True).get_data(as_text=True))
        connection_id = int(re.search(r'id="connection-(\d+)"', seen[-1]).group(1))

        def sync_now():
            r = post_form(logged_in, f"/account/connections/{connection_id}/sync", {}, page="/account/connections")
            seen.append(logged_in.get(r.headers["Location"]).get_data(as_text=True))
            seen.append(logged_in.get(r.headers["Location"] + ".json").get_data(as_text=True))
            seen.append(logged_in.get("/account/connections").get_data(as_text=True))

        toggl.fail(429, {"Retry-After": "1"}, path="/me/time_entries")
        sync_now()
        toggl.fail(500, path="/me/time_entries", times=3)   # a failing tracker: an error on the page
        sync_now()
        toggl.token = TOKENS[1]                             # revoked upstream: paused, e-mailed
        sync_now()
        post_form(logged_in, f"/account/connections/{connection_id}/resume", {"token": TOKENS[1]},
                  page="/account/connections")
        sync_now()

        runner = CliRunner()
        r = runner.invoke(cli, ["sync", "connect", "--account", "consultant@example.com", "--tracker", "clockify",
                                "--token-stdin", "--api-url", trackers.url, "--json"], input=TOKENS[2] + "\n")
        assert r.exit_code == 0, r.output
        seen.append(r.output)
        r = runner.invoke(cli, ["sync", "connect", "--account", "consultant@example.com", "--tracker", "clockify",
                                "--token-stdin", "--api-url", trackers.url], input="cfy_wrong_" + TOKENS[2] + "\n")
        assert r.exit_code == 2 and "refused the API token" in r.output
        seen.append(r.output)
        for args in (["sync", "run", "--json"], ["sync", "run"], ["sync", "list"], ["sync", "list", "--json"]):
            seen.append(runner.invoke(cli, args).output)
        with app.app_context():
            session = app.extensions["hourtab.sessionmaker"]()
            with transaction(session):
                session.execute(update(Connection).values(api_url=f"http://127.0.0.1:{free_port()}"))
            session.close()
        seen.append(runner.invoke(cli, ["sync", "run", "--json"]).output)   # unreachable: both fail
    for url in ("/account/connections", "/dashboard", "/imports", "/account/settings"):
        seen.append(logged_in.get(url).get_data(as_text=True))
    with app.app_context():
        session = app.extensions["hourtab.sessionmaker"]()
        for job in session.scalars(select(Job)):
            seen.append(logged_in.get(f"/jobs/{job.id}.json").get_data(as_text=True))
        upload_ids = session.execute(text("SELECT upload_id FROM sync_connections")).scalars().all()
        session.close()
    for upload_id in upload_ids:
        seen.append(logged_in.get(f"/imports/{upload_id}").get_data(as_text=True))

    logs = "\n".join(caplog.text.splitlines() + [r.getMessage() for r in caplog.records])
    mails = [m.as_string() for _, m in sink.messages]
    corpus = {"logs": logs, "pages and CLI": "\n".join(seen), "e-mails": "\n".join(mails),
              "database": database_text(app, database_url)}
    # The corpus is the real thing: requests were logged, errors shown, e-mails sent, rows written.
    assert "GET /api/v9/me/time_entries" in logs and "/api/v1/user" in logs
    assert "Toggl Track refused the API token (HTTP 403)" in corpus["pages and CLI"]
    assert "Toggl Track answered HTTP 500 (after several tries)" in corpus["pages and CLI"]
    assert "could not be reached" in corpus["pages and CLI"] and "…b3c4" in corpus["pages and CLI"]
    assert len(mails) == 1 and "paused your Toggl Track connection" in mails[0]
    assert "sync_run" in corpus["database"] and "Ada Lovelace" in corpus["database"]
    for token in TOKENS:
        for form in forms(token):
            for where, body in corpus.items():
                assert form not in body, f"{token} ({form}) found in {where}"
