"""The ``hourtab`` CLI invoked in-process, and the arguments of the smallest reproducer run."""

from __future__ import annotations

from click.testing import CliRunner

from app.cli import cli

TINY_ARGS = ["--preset", "tiny", "--steps", "6", "--warmup", "2", "--profile-steps", "1", "--threads", "1",
             "--no-progress"]


def run_cli(args: list[str]):
    return CliRunner().invoke(cli, args, catch_exceptions=False)
