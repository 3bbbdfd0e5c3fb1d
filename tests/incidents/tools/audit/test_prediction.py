"""The audit's prediction against the reproducer, on this machine: calibrate, measure, compare.

``hourtab repro --calibrate`` measures wandb's histogram cost here and keeps it in the data dir;
``hourtab repro --preset tiny`` measures what ``wandb.watch(log="all", log_freq=1)`` adds to a real
tiny-BERT step; ``hourtab audit`` reads a script that builds the same model and must predict that
added time within a factor of two. Small steps and one torch thread (two shared cores).
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


def test_prediction_within_2x_of_the_reproducer(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    root = tmp_path / "wandb"
    for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(root),
                       "WANDB_CONFIG_DIR": str(root / "config"), "WANDB_CACHE_DIR": str(root / "cache"),
                       "WANDB_DATA_DIR": str(root / "data"), "HOURTAB_DATA_DIR": str(tmp_path / "data")}.items():
        monkeypatch.setenv(key, value)
    calibrated = invoke(["repro", "--calibrate", "--threads", "1", "--device", "cpu"])
    assert calibrated.exit_code == 0, calibrated.output
    assert (tmp_path / "data" / "watch-calibration.json").is_file()

    out = tmp_path / "repro"
    measured = invoke(["repro", "--preset", "tiny", "--modes", "baseline,watch:all:1", "--steps", "4", "--warmup", "1",
                       "--profile-steps", "0", "--threads", "1", "--no-progress", "--out", str(out)])
    assert measured.exit_code == 0, measured.output
    modes = {m["mode"]: m for m in json.loads((out / "profile.json").read_text())["modes"]}
    added = modes["watch:all:1"]["mean_step_s"] - modes["baseline"]["mean_step_s"]

    train = tmp_path / "train.py"
    shutil.copyfile(DATA / "hidden_config.py.txt", train)
    audited = invoke(["audit", str(train), "--json"])
    assert audited.exit_code == 1
    watch = next(f for f in json.loads(audited.output)["findings"] if f["rule"] == "wandb_watch")
    predicted = watch["prediction"]["per_step_s"]
    assert watch["prediction"]["calibration"].startswith("stored calibration")
    print(f"predicted {predicted:.3f} s, measured {added:.3f} s per step: ratio {predicted / added:.2f}")
    assert added > 0 and 0.5 <= predicted / added <= 2.0, (predicted, added)
