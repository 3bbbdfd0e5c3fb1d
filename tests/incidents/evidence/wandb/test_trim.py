"""The corpus trimming tool: a trimmed run keeps the records the rules read, and so its verdicts."""

from __future__ import annotations

import math
import tarfile

import numpy as np
import pytest

from incidents.diagnosis import diagnose
from incidents.evidence.wandb import load_run
from incidents.evidence.wandb.framing import iter_records
from incidents.evidence.wandb.trim import TrimLimits, trim_run_folder
from scripts.trim_wandb_run import main as trim_cli
from tests.helpers.corpus import archive

wandb = pytest.importorskip("wandb")


def _verdicts(run) -> dict[str, tuple[bool, str]]:
    return {f.rule: (f.fired, f.cls) for f in diagnose(run)}


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    """1,500 training steps of a falling loss, an evaluation row every 100 steps, then a loss that
    goes NaN for good; console lines and summary records as the SDK writes them."""
    from tests.helpers.gpu_host import add_gpu_host
    from tests.helpers.wandb_runs import offline_wandb, run_folder, sdk_run

    root = tmp_path_factory.mktemp("long")
    rng = np.random.default_rng(0)
    with offline_wandb(root):
        with sdk_run(root, "long", {"epochs": 3}) as run:
            for step in range(1500):
                loss = float("nan") if step >= 1480 else 2.0 * math.exp(-step / 400) + rng.normal(0, 0.02)
                row = {"train/loss": loss, "train/lr": 1e-3}
                if step % 100 == 99:
                    row["val/loss"] = 1.0 + abs(rng.normal(0, 0.01))
                run.log(row)
        folder = run_folder(run)
    add_gpu_host(folder, gpus=2, util=60.0, memory=30.0, samples=200)
    return folder


def test_a_trimmed_run_keeps_its_verdicts_and_the_rows_the_rules_read(long_run, tmp_path):
    original = load_run(long_run)
    done = trim_run_folder(long_run, tmp_path / "trimmed", TrimLimits(rows=300, stats=40))
    trimmed = load_run(tmp_path / "trimmed")
    assert done.rows_in == 1500 and done.rows_out < 600 and done.bytes_out < done.bytes_in / 2
    assert _verdicts(trimmed) == _verdicts(original)
    assert _verdicts(trimmed)["exploding_gradients"] == (True, "engineering")
    # every evaluation row and every row with the NaN loss is kept; the stats thinned evenly
    pd_val = trimmed.history["val/loss"].dropna()
    assert list(pd_val.index) == list(original.history["val/loss"].dropna().index)
    assert trimmed.nonfinite == original.nonfinite and trimmed.nonfinite["train/loss"]["from_step"] == 1480
    assert len(trimmed.system) == 40 and trimmed.ending == original.ending
    assert trimmed.config == original.config and trimmed.summary == original.summary


def test_trimming_drops_the_records_no_rule_reads(long_run, tmp_path):
    trim_run_folder(long_run, tmp_path / "t")
    from wandb.proto.wandb_internal_pb2 import Record

    kinds = {Record.FromString(p).WhichOneof("record_type") for _, p in
             iter_records(next((tmp_path / "t").glob("run-*.wandb")), [])}
    assert kinds <= {"header", "run", "environment", "config", "telemetry", "history", "summary", "stats", "exit",
                     "final", "footer", "output_raw", "output"}
    assert "files" not in kinds and "request" not in kinds


def test_a_legacy_run_folder_trims_to_the_same_verdicts(tmp_path):
    """wandb 0.8: history and events as JSON lines, output.log beside them."""
    with tarfile.open(archive("mnist-device-crash-0.8")) as t:
        t.extractall(tmp_path / "run", filter="data")
    original = load_run(tmp_path / "run")
    assert trim_cli([str(tmp_path / "run"), str(tmp_path / "small"), "--rows", "200"]) == 0
    trimmed = load_run(tmp_path / "small")
    assert len(trimmed.history) < len(original.history) and _verdicts(trimmed) == _verdicts(original)
    assert trimmed.ending == original.ending and trimmed.ending["cause"] == "device mismatch"


def test_the_command_refuses_what_is_not_a_folder(tmp_path, capsys):
    assert trim_cli([str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    assert "is not a folder" in capsys.readouterr().err
