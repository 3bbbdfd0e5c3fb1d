"""``hourtab retainer create|edit --language``: the language a client's documents are written in."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from app.cli import cli
from tests.helpers.cli import assert_refused

CREATE = ["retainer", "create", "--account", "ada@example.com", "--name", "Support", "--client", "Acme",
          "--hours", "20", "--start", "2026-01-01", "--json"]


@pytest.fixture
def cli_env(database_url, tmp_path):
    environ = {"HOURTAB_DATA_DIR": str(tmp_path / "data"), "HOURTAB_DATABASE_URL": database_url}
    made = CliRunner().invoke(cli, ["user", "create", "ada@example.com", "--password-stdin"], env=environ,
                              input="correct horse battery\n")
    assert made.exit_code == 0, made.output
    pro = CliRunner().invoke(cli, ["user", "set-plan", "ada@example.com", "pro"], env=environ)
    assert pro.exit_code == 0, pro.output
    return environ


def _language(url: str, retainer_id: int) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT language FROM retainers WHERE id = :id"), {"id": retainer_id}).scalar_one()
    finally:
        engine.dispose()


def test_a_retainer_is_created_in_a_language_and_edited_into_another(cli_env):
    runner = CliRunner()
    plain = runner.invoke(cli, CREATE, env=cli_env)
    german = runner.invoke(cli, [*CREATE, "--language", "DE"], env=cli_env)
    assert plain.exit_code == 0 and german.exit_code == 0, plain.output + german.output
    plain_id, german_id = json.loads(plain.output)["id"], json.loads(german.output)["id"]
    assert _language(cli_env["HOURTAB_DATABASE_URL"], plain_id) == "en"
    assert _language(cli_env["HOURTAB_DATABASE_URL"], german_id) == "de"

    edited = runner.invoke(cli, ["retainer", "edit", str(german_id), "--language", "ja"], env=cli_env)
    assert edited.exit_code == 0, edited.output
    assert _language(cli_env["HOURTAB_DATABASE_URL"], german_id) == "ja"


def test_an_unknown_language_is_refused_in_one_line(cli_env):
    runner = CliRunner()
    refused = runner.invoke(cli, [*CREATE, "--language", "klingon"], env=cli_env)
    assert_refused(refused)
    assert "Unknown language 'klingon'" in refused.stderr and "de" in refused.stderr
    made = runner.invoke(cli, CREATE, env=cli_env)
    retainer_id = json.loads(made.output)["id"]
    assert_refused(runner.invoke(cli, ["retainer", "edit", str(retainer_id), "--language", "xx"], env=cli_env))
    assert _language(cli_env["HOURTAB_DATABASE_URL"], retainer_id) == "en"
