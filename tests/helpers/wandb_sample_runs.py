"""Real offline W&B runs made by the installed wandb SDK, once per test session.

The runs are made in a child process so WANDB_* variables and the wandb service never leak into
the test process. ``expected.json`` records what the script logged, computed while logging.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import json, os, sys, time
out = sys.argv[1]
os.environ.update(WANDB_MODE="offline", WANDB_DIR=out, WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
import torch, wandb
torch.manual_seed(0)
expected = {}

def train(name, steps, watch, stats_interval=None, sleep=0.0):
    settings = wandb.Settings(x_stats_sampling_interval=stats_interval) if stats_interval else None
    run = wandb.init(project="hourtab-tests", name=name, tags=["test", "<b>tag</b>"],
                     config={"lr": 0.05, "note": "<img src=x onerror=alert(1)>", "layers": [4, 8, 1]},
                     settings=settings)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    if watch:
        wandb.watch(model, log="all", log_freq=5)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    logged = []
    for step in range(steps):
        x = torch.randn(16, 4)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        row = {"train/loss": loss.item(), "train/lr": 0.05, "acc": step / steps}
        if step % 3 == 0:
            row["eval/score"] = float(step)
        wandb.log(row)
        logged.append(row)
        if sleep:
            time.sleep(sleep)
    run_dir = run.dir.rsplit("/files", 1)[0] if run.dir.endswith("files") else os.path.dirname(run.dir)
    run.finish()
    n_tensors = sum(1 for _ in model.parameters())
    expected[name] = {
        "dir": run_dir, "run_id": run.id, "steps": steps,
        "metrics": sorted({k for r in logged for k in r}),
        "eval_steps": [i for i in range(steps) if i % 3 == 0],
        "tensors": n_tensors,
        "final_loss": logged[-1]["train/loss"],
    }

train("plain <script>alert(1)</script>", 30, watch=False, stats_interval=0.2, sleep=0.05)
train("watched", 20, watch=True)
wandb.teardown()
json.dump(expected, open(os.path.join(out, "expected.json"), "w"))
'''


def ensure_runs(base: Path) -> dict:
    """Make the runs under ``base`` unless an earlier fixture in this session already did."""
    done = base / "expected.json"
    if not done.exists():
        base.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
        subprocess.run([sys.executable, "-c", SCRIPT, str(base)], check=True, env=env, timeout=240)
    expected = json.loads(done.read_text())
    for run in expected.values():
        run["dir"] = Path(run["dir"])
        run["file"] = next(run["dir"].glob("run-*.wandb"))
    return expected
