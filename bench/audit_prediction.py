"""Benchmark of ``hourtab audit``'s watch-cost prediction against the reproducer (issue 21). Not a test:
one run, figures printed.

    python bench/audit_prediction.py                      # calibrate here, then tiny and bert-base, 1 thread
    python bench/audit_prediction.py --presets bert-base --steps 3
    python bench/audit_prediction.py --calibration cal.json   # predict from a calibration file instead

It runs ``hourtab repro --calibrate --device cpu`` (one torch thread; the calibration checks itself
and is refused if its samples do not hold up), then for each preset ``hourtab repro --modes
watch:all:1`` and ``hourtab audit`` on a script that builds the same model on the CPU and watches it
with ``log="all", log_freq=1``. It prints the predicted hook seconds per step against the measured
ones — the training thread's CPU time inside the hooks, and their wall time — and the ratio. Goal:
predicted ÷ measured CPU within 0.5–2 for each preset. Wall time is shown for what the machine's load
adds on top; it is not the goal on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SCRIPT = '''import torch
import wandb
from transformers import BertConfig, BertForSequenceClassification

model = BertForSequenceClassification(BertConfig({sizes}num_labels=14))
run = wandb.init(project="bench")
run.watch(model, log="all", log_freq=1)
for batch in load_batches():
    model(**batch).loss.backward()
'''
SIZES = {"tiny": "hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, ",
         "bert-base": ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=["tiny", "bert-base"], choices=sorted(SIZES))
    parser.add_argument("--steps", type=int, default=3, help="measured steps per preset (default 3)")
    parser.add_argument("--calibration", type=Path, help="predict from this file instead of calibrating here")
    args = parser.parse_args()
    for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true"}.items():
        os.environ.setdefault(key, value)

    from click.testing import CliRunner

    from app.cli import cli

    def invoke(argv: list[str]) -> str:
        result = CliRunner().invoke(cli, argv)
        if result.exit_code not in (0, 1):
            raise SystemExit(f"hourtab {' '.join(argv[:2])} exited {result.exit_code}: {result.output.strip()}")
        return result.output

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.update(HOURTAB_DATA_DIR=str(root / "data"), WANDB_DIR=str(root / "wandb"))
        calibration = args.calibration
        if calibration is None:
            calibration = root / "cal.json"
            print(invoke(["repro", "--calibrate", str(calibration), "--device", "cpu"]).rstrip())
        document = json.loads(calibration.read_text())
        print(f"calibration load average {document['machine'].get('load_average')}\n")
        for preset in args.presets:
            out = root / preset
            invoke(["repro", "--preset", preset, "--modes", "watch:all:1", "--steps", str(args.steps), "--warmup",
                    "1", "--profile-steps", "0", "--threads", "1", "--no-progress", "--out", str(out)])
            (mode,) = json.loads((out / "profile.json").read_text())["modes"]
            steps = mode["steps_measured"]
            script = root / f"{preset}.py"
            script.write_text(SCRIPT.format(sizes=SIZES[preset]))
            report = json.loads(invoke(["audit", str(script), "--json", "--calibration", str(calibration)]))
            predicted = report["findings"][0]["prediction"]["per_step_s"]
            cpu, wall = mode["hook_cpu_s"] / steps, mode["hook_s"] / steps
            print(f"{preset}: {report['model']['parameters']:,} parameters, {report['model']['tensors']} tensors; "
                  f"predicted {predicted:.3f} s of hooks per step; measured {cpu:.3f} s CPU, {wall:.3f} s wall "
                  f"({steps} steps, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}): "
                  f"predicted ÷ measured CPU = {predicted / cpu:.2f}, ÷ wall = {predicted / wall:.2f}")


if __name__ == "__main__":
    main()
