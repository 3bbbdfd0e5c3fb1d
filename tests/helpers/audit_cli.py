"""``hourtab audit`` through the real CLI on the training scripts in ``tests/data/audit`` (read, never run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from app.cli import cli
from tests.helpers.paths import DATA

SCRIPTS = DATA / "audit"


def script(tmp_path: Path, name: str) -> Path:
    """The sample script ``name`` copied to ``tmp_path / "train.py"``."""
    target = tmp_path / "train.py"
    shutil.copyfile(SCRIPTS / f"{name}.py.txt", target)
    return target


def audit(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["audit", *args], env=env, catch_exceptions=False)


def as_json(result) -> dict:
    return json.loads(result.output)


def by_rule(report: dict) -> dict[str, list[dict]]:
    """The report's findings grouped by rule."""
    rules: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        rules.setdefault(finding["rule"], []).append(finding)
    return rules
