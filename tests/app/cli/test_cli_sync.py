"""``hourtab sync connect|run|list``: the token only from stdin, the JSON shapes, refusals exit 2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from app.cli import cli
from tests.helpers.fake_trackers import Harvest, Toggl, serving
from tests.helpers.sync_runs import TOKEN, at, months


@pytest.fixture
def cli_env(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    r = CliRunner().invoke(cli, ["user", "create", "ada@example.com", "--password-stdin"],
                           input="a long enough password\n")
    assert r.exit_code == 0, r.output


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def test_connect_run_list(cli_env):
    toggl, harvest = Toggl(TOKEN), Harvest(TOKEN)
    for i in range(3):
        toggl.add(at(months()[1], 1 + i), 1200, f"Entry {i}")
    harvest.add(months()[1], 1.5, "Notes")
    with serving(toggl=toggl, harvest=harvest) as trackers:
        r = invoke("sync", "connect", "--account", "ada@example.com", "--tracker", "toggl", "--token-stdin",
                   "--api-url", trackers.url, "--json", stdin=TOKEN + "\n")
        assert r.exit_code == 0, r.output
        assert json.loads(r.output) == {"id": 1, "tracker": "toggl", "workspace": "4810101"}
        r = invoke("sync", "connect", "--account", "ada@example.com", "--tracker", "harvest", "--token-stdin",
                   "--api-url", trackers.url, "--harvest-account", harvest.account, "--json", stdin=TOKEN)
        assert json.loads(r.output) == {"id": 2, "tracker": "harvest", "workspace": harvest.account}

        r = invoke("sync", "run", "--account", "ada@example.com", "--json")
        assert r.exit_code == 0, r.output
        first = {c["tracker"]: c for c in json.loads(r.output)["connections"]}
        assert {k: first["toggl"][k] for k in ("id", "status", "new", "changed", "removed", "unchanged")} == \
            {"id": 1, "status": "done", "new": 3, "changed": 0, "removed": 0, "unchanged": 0}
        assert (first["harvest"]["new"], first["harvest"]["status"]) == (1, "done")

        toggl.edit(next(iter(toggl.entries)), duration=1500)
        r = invoke("sync", "run", "--connection", "1")
        # (the other two come back too: they changed within the minute the cursor overlaps)
        assert r.exit_code == 0 and r.output.strip() == \
            "connection 1 (toggl): done: 0 new, 1 changed, 0 removed, 2 unchanged"

    r = invoke("sync", "list", "--json")
    rows = json.loads(r.output)
    assert [(x["id"], x["tracker"], x["status"], x["token"]) for x in rows] == \
        [(1, "toggl", "active", "…b1a0"), (2, "harvest", "active", "…b1a0")]
    assert rows[0]["last_result"] == {"new": 0, "changed": 1, "removed": 0, "unchanged": 2}
    listed = invoke("sync", "list").output
    assert "ada@example.com\ttoggl\t4810101\tactive\ttoken …b1a0" in listed and TOKEN not in listed


@pytest.mark.parametrize("args, stdin, message", [
    (["--tracker", "toggl"], TOKEN, "--token-stdin"),                          # never as an argument
    (["--tracker", "toggl", "--token", TOKEN], None, "No such option '--token'"),
    (["--tracker", "harvest", "--token-stdin"], TOKEN, "Harvest needs its account id"),
    (["--tracker", "kimai", "--token-stdin"], TOKEN, "Kimai is self-hosted"),
    (["--tracker", "toggl", "--token-stdin"], "", "The API token is empty."),
    (["--tracker", "toggl", "--token-stdin", "--api-url", "http://tracker.example.com"], TOKEN, "must use https"),
    (["--tracker", "wakatime", "--token-stdin"], TOKEN, "'wakatime' is not one of"),
])
def test_connect_refusals_exit_2_with_one_line(cli_env, args, stdin, message):
    r = invoke("sync", "connect", "--account", "ada@example.com", *args, stdin=stdin)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_run_an_unknown_connection_is_refused(cli_env):
    r = invoke("sync", "run", "--connection", "99")
    assert r.exit_code == 2 and "Connection 99 not found" in r.output


def test_a_revoked_token_is_refused_then_resume_and_remove_from_the_command_line(cli_env):
    toggl = Toggl(TOKEN)
    toggl.add(at(months()[1], 2), 1200, "Entry")
    with serving(toggl=toggl) as trackers:
        r = invoke("sync", "connect", "--account", "ada@example.com", "--tracker", "toggl", "--token-stdin",
                   "--api-url", trackers.url, "--json", stdin=TOKEN)
        connection = json.loads(r.output)["id"]
        toggl.token = "revoked"
        r = invoke("sync", "run", "--json")
        assert r.exit_code == 1
        [outcome] = json.loads(r.output)["connections"]
        assert outcome["status"] == "refused" and "refused the API token" in outcome["error"]
        assert json.loads(invoke("sync", "list", "--json").output)[0]["status"] == "paused"

        toggl.token = "tok_a_new_one_0123456789abcdef"
        r = invoke("sync", "resume", str(connection), "--token-stdin", "--json", stdin=toggl.token)
        assert r.exit_code == 0, r.output
        assert json.loads(r.output) == {"id": connection, "status": "active"}
        r = invoke("sync", "run", "--json")
        assert json.loads(r.output)["connections"][0]["status"] == "done"
    assert json.loads(invoke("sync", "list", "--json").output)[0]["token"] == "…cdef"

    r = invoke("sync", "remove", str(connection), "--account", "nobody@example.com")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    r = invoke("sync", "remove", str(connection), "--json")
    assert r.exit_code == 0 and json.loads(r.output) == {"id": connection, "removed": True}
    assert json.loads(invoke("sync", "list", "--json").output) == []
    r = invoke("sync", "resume", str(connection))
    assert r.exit_code == 2 and f"Connection {connection} not found" in r.output


def test_run_syncs_without_building_the_app(cli_env, monkeypatch):
    """Without e-mail a sync queues nothing and mails nothing: the command spares the app's seconds."""
    def no_app(*args, **kwargs):
        raise AssertionError("hourtab sync run built the app")

    monkeypatch.setattr("app.create_app", no_app)
    toggl = Toggl(TOKEN)
    toggl.add(at(months()[1], 2), 1200, "Entry")
    with serving(toggl=toggl) as trackers:
        invoke("sync", "connect", "--account", "ada@example.com", "--tracker", "toggl", "--token-stdin",
               "--api-url", trackers.url, stdin=TOKEN)
        r = invoke("sync", "run")
    assert r.exit_code == 0 and r.output.strip() == "connection 1 (toggl): done: 1 new, 0 changed, 0 removed, 0 unchanged"


def test_run_with_email_set_up_queues_the_alert_check(cli_env, database_url, monkeypatch):
    from sqlalchemy import create_engine, text

    from tests.helpers.mail import smtp_server

    toggl = Toggl(TOKEN)
    toggl.add(at(months()[1], 2), 1200, "Entry")
    with smtp_server() as (_, smtp_url), serving(toggl=toggl) as trackers:
        monkeypatch.setenv("HOURTAB_SMTP_URL", smtp_url)
        invoke("sync", "connect", "--account", "ada@example.com", "--tracker", "toggl", "--token-stdin",
               "--api-url", trackers.url, stdin=TOKEN)
        r = invoke("sync", "run", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["connections"][0]["new"] == 1
    engine = create_engine(database_url)
    with engine.connect() as c:
        kinds = c.execute(text("SELECT kind, status FROM jobs ORDER BY created_at")).all()
    engine.dispose()
    assert [tuple(k) for k in kinds] == [("sync_run", "done"), ("alerts_check", "queued")]
