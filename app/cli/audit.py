"""``hourtab audit``: a pre-flight check of a training script (read, never run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command("audit")
@click.argument("script", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--params", type=click.IntRange(min=1), help="The model's parameter count, when the script does not say.")
@click.option("--tensors", type=click.IntRange(min=1), help="The model's parameter tensors (with --params).")
@click.option("--run-steps", type=click.IntRange(min=1), default=11_250, show_default=True,
              help="Training steps of the planned run, for the predicted total.")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False),
              help="A calibration file from `hourtab repro --calibrate` (default: the data dir's, else the shipped one).")
@click.option("--fail-on", type=click.Choice(["info", "warn", "error"]), default="error", show_default=True,
              help="Exit 1 when a finding is at or above this severity.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=1024 * 1024, show_default=True,
              help="Refuse scripts larger than this (exit 2).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON (schema hourtab.audit/1).")
def audit(script: Path, params: int | None, tensors: int | None, run_steps: int, calibration: Path | None,
          fail_on: str, max_bytes: int, as_json: bool) -> None:
    """Find what will slow a training script's steps (wandb.watch, profiler, loaders, syncs) before it runs.

    The script is read, never imported or run. Exit status: 0 when no finding is at or above --fail-on,
    1 when one is, 2 when the script (or calibration) is refused: missing, too large, not UTF-8 or not
    parseable.
    """
    from incidents.tools.audit import audit_script, render_text
    from incidents.tools.audit.cost import load_calibration

    # A refused script or calibration is an InvalidInput: the root group prints one line and exits 2.
    report = audit_script(script, params=params, tensors=tensors, run_steps=run_steps,
                          calibration=load_calibration(calibration) if calibration else None, fail_on=fail_on,
                          max_bytes=max_bytes)
    click.echo(json.dumps(report, indent=2) if as_json else render_text(report))
    if report["failed"]:
        sys.exit(1)


commands: list[click.Command] = [audit]
