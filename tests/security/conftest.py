"""Security fixtures: a real offline run with a hostile name (the helpers: ``tests/helpers/http_sessions.py``,
``tests/helpers/evidence_uploads.py``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: A run name with characters XML forbids and TeX that matplotlib's mathtext cannot parse.
HOSTILE_NAME = "bad\x01\x02\ufffe $\\frac{$ run"
HOSTILE_SCRIPT = r'''
import json, os, sys
out, name = sys.argv[1], sys.argv[2]
os.environ.update(WANDB_MODE="offline", WANDB_DIR=out, WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
import wandb
run = wandb.init(project="sec\x01urity", name=name, tags=["t\x02ag"], config={"lr": 0.1})
for i in range(30):
    wandb.log({"loss": 1.0 / (i + 1), "acc $x^{": i / 30, "train/step_time": 0.1})
run.finish()
wandb.teardown()
'''


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory) -> dict:
    """One real offline run written by the wandb SDK, with a hostile name and metric key."""
    root = tmp_path_factory.mktemp("hostile_run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    subprocess.run([sys.executable, "-c", HOSTILE_SCRIPT, str(root), HOSTILE_NAME], check=True, env=env,
                   timeout=240)
    file = next(root.rglob("run-*.wandb"))
    return {"file": file, "dir": file.parent, "clean_name": "bad $\\frac{$ run"}
