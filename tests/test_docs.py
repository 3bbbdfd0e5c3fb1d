"""The README cannot drift: its settings table, quickstart and commands are checked here."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from app.cli import cli
from app.config import DEFAULTS, SETTINGS, from_environment

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_setting_is_in_the_readme_table_with_the_default_the_app_reads():
    rows = dict(re.findall(r"^\| `(HOURTAB_[A-Z_]+)` \| (.*?) \| ", README, re.M))
    assert {s.env: s.documented_default for s in SETTINGS} == rows


def test_an_unset_setting_reads_as_its_documented_default(tmp_path):
    config = from_environment({"HOURTAB_DATA_DIR": str(tmp_path)})
    assert config["SYNC_MINUTES"] == float(DEFAULTS["HOURTAB_SYNC_MINUTES"]) == 15
    assert config["MAIL_FROM"] == DEFAULTS["HOURTAB_MAIL_FROM"] == "HourTab <hourtab@localhost>"
    assert config["MAX_CONTENT_LENGTH"] == 256 * 1024 * 1024 and config["PUBLIC_URL_SET"] is False


def test_every_hourtab_variable_the_code_reads_is_declared():
    root = Path(__file__).resolve().parent.parent
    declared = {s.env for s in SETTINGS}
    used = set()
    for pkg in ("app", "hourtab", "incidents"):
        for path in (root / pkg).rglob("*.py"):
            used |= set(re.findall(r"""["'](HOURTAB_[A-Z_]+)["']""", path.read_text()))
    assert used <= declared, used - declared


def test_quickstart_is_exactly_two_commands_that_exist():
    block = README.split("## Quickstart", 1)[1].split("```", 2)[1]
    commands = [line for line in block.splitlines()[1:] if line.strip()]
    assert commands == ["./scripts/start.sh", "./scripts/test.sh"]
    root = Path(__file__).resolve().parent.parent
    for command in commands:
        assert (root / command).exists()


def test_readme_command_table_matches_cli():
    top = set(cli.commands)
    for name in re.findall(r"^\| `hourtab ([a-z-]+)", README, re.M):
        assert name in top, name
    help_text = CliRunner().invoke(cli, ["--help"]).output
    for name in top:
        assert name in help_text
