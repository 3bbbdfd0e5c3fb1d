"""Every CLI command refuses bad input the same way: exit 2, one line on stderr, no traceback.

The commands are found by walking the click group, so a new command is covered at once by the
unknown-option case and fails ``test_every_command_has_a_bad_input`` until it gets its own case.
"""

from __future__ import annotations

import re
import shutil

import click
import pytest
from click.testing import CliRunner

from app.cli import cli
from tests.helpers.cli import assert_refused


def leaf_commands(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found.extend(leaf_commands(command, (*prefix, name)))
        else:
            found.append((*prefix, name))
    return found


COMMANDS = leaf_commands()

#: A domain-level bad input per command (``{tmp}`` is a folder of junk files, see ``env``); an
#: argument ``HOURTAB_…=value`` is an environment setting instead.
BAD_INPUTS: dict[tuple[str, ...], list[str]] = {
    ("serve",): ["HOURTAB_DATABASE_URL=not a url"],
    ("db", "upgrade"): ["HOURTAB_DATABASE_URL=not a url"],
    ("user", "create"): ["not-an-email", "--password-stdin"],
    ("user", "set-plan"): ["nobody@example.com", "pro"],
    ("csv", "inspect"): ["{tmp}/binary.csv"],
    ("import",): ["{tmp}/binary.csv", "--account", "nobody@example.com"],
    ("retainer", "create"): ["--account", "ada@example.com", "--name", "R", "--client", "C", "--hours", "lots"],
    ("retainer", "edit"): ["999999", "--hours", "25"],
    ("entries", "remove"): ["999999"],
    ("entries", "restore"): ["999999", "--entry", "1"],
    ("retainer", "rotate-token"): ["999999"],
    ("ledger",): ["999999"],
    ("wandb", "inspect"): ["{tmp}/notes.txt"],
    ("repro",): ["--preset", "tiny", "--modes", "watch:every:1", "--out", "{tmp}/repro"],
    ("profile", "inspect"): ["{tmp}/notes.txt"],
    ("incident", "build"): ["--account", "ada@example.com", "--title", "T", "--run", "incident={tmp}/notes.txt"],
    ("incident", "diagnose"): ["{tmp}/notes.txt"],
    ("incident", "render"): ["999999", "--pdf", "{tmp}/out.pdf"],
    ("audit",): ["{tmp}/binary.csv"],
    ("watchdog",): ["{tmp}/no-such-folder", "--once"],
    ("worker",): ["--threads", "0"],
    ("sync", "connect"): ["--account", "ada@example.com", "--tracker", "kimai", "--token-stdin"],  # stdin: no token
    ("sync", "run"): ["--connection", "999999"],
    ("sync", "list"): ["--account", "nobody@example.com"],
    ("token", "create"): ["--account", "ada@example.com", "--name", "   "],
    ("token", "list"): ["--account", "nobody@example.com"],
    ("token", "revoke"): ["999999", "--account", "ada@example.com"],
    ("sync", "resume"): ["999999"],
    ("sync", "remove"): ["999999"],
    ("invoice", "profile"): ["--account", "ada@example.com", "--name", "Ada", "--tax-rate", "lots"],
    ("invoice", "client"): ["999999", "--account", "ada@example.com", "--name", "Client"],
    ("invoice", "issue"): ["999999", "--account", "ada@example.com", "--month", "2025-13"],
}


@pytest.fixture(scope="module")
def env(tmp_path_factory, sqlite_template):
    """A migrated SQLite database with one account, and a folder of files no command can use."""
    tmp = tmp_path_factory.mktemp("refusals")
    shutil.copyfile(sqlite_template, tmp / "hourtab.db")
    (tmp / "binary.csv").write_bytes(b"%PDF-1.7\x00\x01\x02\xff\xfe" * 50)
    (tmp / "notes.txt").write_text("just some notes, not a run or a profile\n")
    environ = {"HOURTAB_DATA_DIR": str(tmp / "data"), "HOURTAB_DATABASE_URL": f"sqlite:///{tmp / 'hourtab.db'}",
               "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    created = CliRunner().invoke(cli, ["user", "create", "ada@example.com", "--password-stdin"], env=environ,
                                 input="correct horse battery\n")
    assert created.exit_code == 0, created.output
    return tmp, environ


def test_every_command_has_a_bad_input():
    assert set(BAD_INPUTS) == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_unknown_option_is_refused(command, env):
    _, environ = env
    assert_refused(CliRunner().invoke(cli, [*command, "--no-such-option"], env=environ))


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_bad_input_is_refused(command, env):
    tmp, environ = env
    args = [a.replace("{tmp}", str(tmp)) for a in BAD_INPUTS[command]]
    settings = dict(a.split("=", 1) for a in args if re.fullmatch(r"HOURTAB_[A-Z_]+=.*", a))
    args = [a for a in args if not re.fullmatch(r"HOURTAB_[A-Z_]+=.*", a)]
    result = CliRunner().invoke(cli, [*command, *args], env={**environ, **settings},
                                input="a long enough password\n")
    assert_refused(result)


@pytest.mark.parametrize("group", [[], ["csv"], ["incident"]], ids=lambda g: " ".join(["hourtab", *g]))
def test_a_bare_group_shows_its_usage_in_full(group):
    result = CliRunner().invoke(cli, group, prog_name="hourtab")
    assert result.exit_code == 2
    assert result.stderr.startswith("Usage: hourtab") and "Commands:" in result.stderr
