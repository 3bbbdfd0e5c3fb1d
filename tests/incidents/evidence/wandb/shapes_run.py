"""One real offline W&B run logging every shape a history reader must keep apart, made once per session.

300 steps (so the column buffers grow several times) of: a metric at every step, one every 7th step,
one that first appears at step 150, one that is a number, a string or a boolean by turns, one that is
sometimes ``None``, one that logs NaN and ±inf, an integer, and now and then a nested dict, a text
key and ``wandb.Histogram`` values plain and nested (``{"Gradients": {"fc": …}}``), so plain
numeric rows (read through the protobuf views) and the other rows (read item by item) interleave.
The script records what it logged (``logged.json``, NaN and inf kept) so the test compares the
reading with the truth, not with another reading.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STEPS = 300

SCRIPT = r'''
import json, math, os, sys
out = sys.argv[1]
steps = int(sys.argv[2])
os.environ.update(WANDB_MODE="offline", WANDB_DIR=out, WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
import numpy as np, wandb
run = wandb.init(project="hourtab-tests", name="shapes")
rows, hists = [], []
for step in range(steps):
    row = {"train/loss": 1.0 / (step + 1) + 1e-9 * step, "count": step * 3}
    if step < 10 or step % 40 == 0:
        row["phase"] = "warmup" if step < 10 else "train"
    if step % 7 == 0:
        row["eval/acc"] = 0.5 + step / 1000
    if step >= 150:
        row["late"] = step / 7
    row["mixed"] = "n/a" if step % 11 == 5 else (True if step % 11 == 6 else step * 0.25)
    if step % 5 == 0:
        row["maybe"] = None if step % 10 == 0 else step
    if step in (100, 101, 102):
        row["diverge"] = [math.nan, math.inf, -math.inf][step - 100]
    elif step % 2 == 0:
        row["diverge"] = float(step)
    if step % 25 == 0:
        row["opt"] = {"lr": 0.1 / (step + 1), "moments": {"beta1": 0.9}}
    if step % 50 == 49:
        counts = np.arange(1, 9) * (step + 1)
        bins = np.linspace(-1.0, 1.0, 9) * (step + 1)
        row["weights_hist"] = wandb.Histogram(np_histogram=(counts, bins))
        row["Gradients"] = {"fc": wandb.Histogram(np_histogram=(counts[::-1], bins))}
        hists.append({"step": step, "counts": counts.tolist(), "bins": bins.tolist()})
    wandb.log(row)
    rows.append({k: v for k, v in row.items() if k not in ("weights_hist", "Gradients")})
run.summary["manual"] = 42
run.finish()
wandb.teardown()
json.dump({"rows": rows, "hists": hists}, open(os.path.join(out, "logged.json"), "w"))
'''


def ensure_shapes_run(base: Path) -> dict:
    """Make the run under ``base`` unless this session already did; returns its file and what it logged."""
    done = base / "logged.json"
    if not done.exists():
        base.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
        subprocess.run([sys.executable, "-c", SCRIPT, str(base), str(STEPS)], check=True, env=env, timeout=240)
    logged = json.loads(done.read_text())
    logged["file"] = next(base.rglob("run-*.wandb"))
    return logged
