"""Reproducer fixtures: real tiny-BERT runs through the real CLI, W&B offline into a temp folder.

Each run is made once per test session and shared, because training is the slow part; tests only
read what it wrote. Steps are kept small (two shared cores) and torch uses one thread.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.factories import offline_wandb
from tests.helpers.cli import TINY_ARGS, run_cli


@pytest.fixture(scope="session")
def wandb_offline(tmp_path_factory) -> Path:
    """W&B offline, silent, with every folder it writes under a temp directory."""
    with offline_wandb(tmp_path_factory.mktemp("wandb_home")) as root:
        yield root


@pytest.fixture(scope="session")
def tiny_run(wandb_offline, tmp_path_factory) -> tuple[Path, dict]:
    """``hourtab repro --preset tiny`` with the three default modes; returns (out, profile.json)."""
    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("repro") / "out"
    result = run_cli(["repro", *TINY_ARGS, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, json.loads((out / "profile.json").read_text())


@pytest.fixture(scope="session")
def freq100_run(wandb_offline, tmp_path_factory) -> tuple[Path, dict]:
    """watch:gradients:100 trained for exactly 100 backward passes, so it logs once."""
    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("repro") / "freq100"
    result = run_cli(["repro", "--preset", "tiny", "--modes", "watch:gradients:100", "--warmup", "1",
                      "--steps", "99", "--layers", "1", "--hidden", "32", "--seq-len", "16", "--batch-size", "1", "--profile-steps", "0",
                      "--threads", "1", "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, json.loads((out / "profile.json").read_text())
