"""The ``hourtab`` CLI invoked in-process: a run, a refusal as users must see it, the smallest reproducer run."""

from __future__ import annotations

import click.testing
from click.testing import CliRunner

from app.cli import cli

TINY_ARGS = ["--preset", "tiny", "--steps", "6", "--warmup", "2", "--profile-steps", "1", "--threads", "1",
             "--no-progress"]


def run_cli(args: list[str]):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def assert_refused(result: click.testing.Result) -> None:
    """Refused as bad input: status 2, one ``Error: …`` line on stderr, no traceback."""
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
