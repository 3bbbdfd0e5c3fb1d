"""The audit's prediction against the reproducer, on this machine: calibrate, measure, compare (issue 21, item 4).

``hourtab repro --calibrate`` measures wandb's histogram cost here (one torch thread, timed by the
training thread's CPU clock, checked before it is saved) and keeps it in the data dir; ``hourtab repro
--preset tiny`` measures the time a real tiny-BERT step spends inside ``wandb.watch(log="all",
log_freq=1)``'s hooks; ``hourtab audit`` reads a script that builds the same model and must predict
that hook time within a factor of two. Both sides count the hooks' work on the training thread (CPU
time), which a machine shared with other jobs does not inflate; the wall-clock figures are printed
beside them. Small steps and one torch thread (two shared cores).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli

pytestmark = [pytest.mark.torch, pytest.mark.slow]
DATA = Path(__file__).resolve().parents[3] / "data" / "audit"


def invoke(args: list[str]):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_predicted_hook_time_within_2x_of_the_reproducers(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    root = tmp_path / "wandb"
    for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(root),
                       "WANDB_CONFIG_DIR": str(root / "config"), "WANDB_CACHE_DIR": str(root / "cache"),
                       "WANDB_DATA_DIR": str(root / "data"), "HOURTAB_DATA_DIR": str(tmp_path / "data")}.items():
        monkeypatch.setenv(key, value)
    calibrated = invoke(["repro", "--calibrate", "--device", "cpu"])
    assert calibrated.exit_code == 0, calibrated.output
    stored = json.loads((tmp_path / "data" / "watch-calibration.json").read_text())
    assert stored["checks"]["passed"] and stored["machine"]["torch_threads"] == 1
    assert stored["machine"]["load_average"]["before"] is not None
    assert stored["devices"]["cpu"]["gradients"]["clock"] == "thread CPU time"

    out = tmp_path / "repro"
    measured = invoke(["repro", "--preset", "tiny", "--modes", "watch:all:1", "--steps", "4", "--warmup", "1",
                       "--profile-steps", "0", "--threads", "1", "--no-progress", "--out", str(out)])
    assert measured.exit_code == 0, measured.output
    (mode,) = json.loads((out / "profile.json").read_text())["modes"]
    hook_cpu = mode["hook_cpu_s"] / mode["steps_measured"]
    hook_wall = mode["hook_s"] / mode["steps_measured"]

    train = tmp_path / "train.py"
    shutil.copyfile(DATA / "tiny_cpu.py.txt", train)
    audited = invoke(["audit", str(train), "--json"])
    assert audited.exit_code == 1
    (watch,) = json.loads(audited.output)["findings"]
    assert watch["prediction"]["calibration"].startswith("stored calibration")
    predicted = watch["prediction"]["per_step_s"]
    print(f"predicted {predicted:.3f} s of hooks per step; measured {hook_cpu:.3f} s CPU ({hook_wall:.3f} s wall, "
          f"load average {stored['machine']['load_average']['before']}): ratio {predicted / hook_cpu:.2f}")
    assert hook_cpu > 0 and 0.5 <= predicted / hook_cpu <= 2.0, (predicted, hook_cpu, hook_wall)
