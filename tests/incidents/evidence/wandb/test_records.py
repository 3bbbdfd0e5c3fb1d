"""Real offline runs read back: exact steps, metrics, histograms, environment; leet agrees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from incidents.evidence.wandb import load_run
from incidents.evidence.wandb.records import iter_decoded

WANDB_CLI = str(Path(sys.executable).parent / "wandb")


def leet_records(path: Path) -> list[dict]:
    out = subprocess.run([WANDB_CLI, "leet", "inspect", "--json", str(path)], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _flat(items, field="nested_key") -> dict:
    return {(".".join(getattr(i, field)) if getattr(i, field) else i.key): json.loads(i.value_json) for i in items}


@pytest.mark.torch
@pytest.mark.parametrize("name", ["plain <script>alert(1)</script>", "watched"])
def test_framing_reader_agrees_with_wandb_leet_record_for_record(wandb_runs, name):
    path = wandb_runs[name]["file"]
    leet = leet_records(path)
    warnings: list[str] = []
    ours = [record for _, record in iter_decoded(path, warnings)]
    assert warnings == []
    assert len(ours) == len(leet) and len(ours) > 20
    compared = {"history": 0, "summary": 0, "stats": 0}
    for mine, theirs in zip(ours, leet, strict=True):
        kind = mine.WhichOneof("record_type")
        assert kind == theirs["type"]
        if kind == "history":
            assert _flat(mine.history.item) == theirs["history"]["item"]
            assert mine.history.step.num == theirs["history"].get("step", {}).get("num", 0)
        elif kind == "summary":
            assert _flat(mine.summary.update) == theirs["summary"].get("update", {})
        elif kind == "stats":
            assert {i.key: json.loads(i.value_json) for i in mine.stats.item} == theirs["stats"]["item"]
        else:
            continue
        compared[kind] += 1
    assert compared["history"] == wandb_runs[name]["steps"]
    assert compared["summary"] >= compared["history"]


@pytest.mark.torch
def test_plain_run_comes_back_exactly(wandb_runs):
    expected = wandb_runs["plain <script>alert(1)</script>"]
    run = load_run(expected["dir"])
    assert run.kind == "run" and run.run_id == expected["run_id"]
    assert run.name == "plain <script>alert(1)</script>" and run.project == "hourtab-tests"
    assert run.tags == ["test", "<b>tag</b>"] and run.state == "finished"
    assert run.steps == expected["steps"]
    assert list(run.history.index) == list(range(expected["steps"]))
    assert run.metrics == expected["metrics"]
    assert run.history["eval/score"].dropna().index.tolist() == expected["eval_steps"]
    assert run.history["train/loss"].iloc[-1] == expected["final_loss"]
    assert run.config == {"lr": 0.05, "note": "<img src=x onerror=alert(1)>", "layers": [4, 8, 1]}
    assert run.summary["train/loss"] == expected["final_loss"] and run.summary["_step"] == expected["steps"] - 1
    # step time is derived from _runtime deltas
    derived = np.diff(run.history["_runtime"].to_numpy())
    assert np.allclose(run.history["step_time_s"].to_numpy()[1:], derived)
    assert run.history["step_time_s"].iloc[1:].min() >= 0.04          # the script slept 0.05 s a step
    assert len(run.histograms) == 0 and run.warnings == []
    # system metrics sampled every 0.2 s appear under the server's names, indexed by time
    assert len(run.system) >= 3
    assert {"system.cpu", "system.memory_percent", "system.proc.memory.rssMB"} <= set(run.system.columns)
    assert run.system.index.is_monotonic_increasing and (run.system["_runtime"] >= 0).all()
    assert run.runtime_s >= run.history["_runtime"].max()
    assert run.started_at is not None and run.ended_at > run.started_at


@pytest.mark.torch
def test_environment_is_read_from_the_log_and_requirements(wandb_runs):
    import platform
    from importlib.metadata import version

    env = load_run(wandb_runs["watched"]["dir"]).environment
    assert env["python"].endswith(platform.python_version())
    assert env["wandb"] == version("wandb")
    assert env["torch"] == version("torch")
    assert env["cpu_count"] >= 1 and env["cpu"] and env["host"] and env["os"]
    assert env["program"]


@pytest.mark.torch
def test_watch_histograms_come_back_exactly(wandb_runs):
    expected = wandb_runs["watched"]
    run = load_run(expected["file"])
    h = run.histograms
    # log_freq=5 counts hook calls: histograms land on steps 4, 9, 14, 19 for each of the 4 tensors
    steps = [s for s in range(expected["steps"]) if (s + 1) % 5 == 0]
    assert sorted(set(h["step"])) == steps
    per_kind = len(steps) * expected["tensors"]
    assert run.histogram_counts == {"gradients": per_kind, "parameters": per_kind, "other": 0,
                                    "logged_gradients": 0, "logged_parameters": 0}
    assert (h["kind"] == "gradients").sum() == per_kind and (h["kind"] == "parameters").sum() == per_kind
    assert set(h["tensor"]) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    wide = h[h["tensor"] == "0.weight"]
    for bins, counts in zip(wide["bins"], wide["counts"], strict=True):
        assert len(bins) == 65 and len(counts) == 64
        assert counts.sum() == 32                       # Linear(4, 8).weight has 32 elements
        assert np.all(np.diff(bins) > 0)
    # histograms never leak into the scalar history or the summary
    assert not any(c.startswith(("gradients/", "parameters/")) for c in run.history.columns)
    assert not any(k.startswith(("gradients/", "parameters/")) for k in run.summary)
    assert run.metrics == expected["metrics"]


@pytest.mark.torch
def test_legacy_run_folder_files_are_read(wandb_runs, tmp_path):
    """A pre-0.30 layout (JSON/YAML files, no .wandb), written from a real run's values."""
    source = load_run(wandb_runs["watched"]["dir"])
    folder = tmp_path / "wandb" / "run-20240101_000000-legacy01"
    files = folder / "files"
    files.mkdir(parents=True)
    (files / "config.yaml").write_text("wandb_version: 1\nlr:\n  desc: null\n  value: 0.05\n")
    (files / "wandb-metadata.json").write_text(json.dumps(
        {"python": "3.10.12", "os": "Linux", "host": "gpu-box", "cpu_count": 16, "gpu": "NVIDIA A100-SXM4-40GB",
         "gpu_count": 1, "cuda": "12.1", "program": "train.py", "args": ["--epochs", "1"],
         "git": {"commit": "abc123", "remote": "git@example.com:x.git"}}))
    (files / "wandb-summary.json").write_text(json.dumps({"train/loss": 0.5, "_wandb": {"runtime": 3}}))
    rows = []
    for step, row in source.history.iterrows():
        rows.append({"_step": int(step), "_runtime": row["_runtime"], "_timestamp": row["_timestamp"],
                     "train/loss": row["train/loss"]})
    for _, hrow in source.histograms[source.histograms["step"] == 4].iterrows():
        rows[4][hrow["key"]] = {"_type": "histogram", "bins": hrow["bins"].tolist(), "values": hrow["counts"].tolist()}
    (files / "wandb-history.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    events = [{"system.gpu.0.gpu": u, "system.cpu": 10.0, "_timestamp": 1000.0 + 2 * i, "_runtime": 2 * i,
               "_wandb": True} for i, u in enumerate([0, 90, 95, 20, 92, 0])]
    (files / "wandb-events.jsonl").write_text("\n".join(json.dumps(r) for r in events) + "\n")
    run = load_run(tmp_path / "wandb")
    assert run.run_id == "legacy01" and run.config == {"lr": 0.05}
    assert run.summary == {"train/loss": 0.5}
    assert run.environment["gpu_name"] == "NVIDIA A100-SXM4-40GB" and run.environment["git_commit"] == "abc123"
    assert run.steps == source.steps and run.history["train/loss"].tolist() == source.history["train/loss"].tolist()
    assert run.histogram_counts == {"gradients": 4, "parameters": 4, "other": 0, "logged_gradients": 0,
                                    "logged_parameters": 0}
    assert list(run.system.columns) == ["_runtime", "system.cpu", "system.gpu.0.gpu"]


@pytest.mark.torch
def test_nested_hand_logged_histograms_in_a_legacy_history_are_read_as_gradients_and_weights(wandb_runs, tmp_path):
    """wandb-history.jsonl rows holding {"Gradients": {name: histogram}, "Weights": {…}} (values of a real run)."""
    source = load_run(wandb_runs["watched"]["dir"])
    folder = tmp_path / "run-20240101_000000-nested01"
    (folder / "files").mkdir(parents=True)
    rows = [{"_step": int(s), "_runtime": float(r["_runtime"]), "train/loss": float(r["train/loss"])}
            for s, r in source.history.iterrows()]
    for _, h in source.histograms[source.histograms["step"] == 4].iterrows():
        group = "Gradients" if h["kind"] == "gradients" else "Weights"
        rows[4].setdefault(group, {})[h["tensor"]] = {"_type": "histogram", "bins": h["bins"].tolist(),
                                                      "values": h["counts"].tolist()}
    (folder / "files" / "wandb-history.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = load_run(folder)
    n = wandb_runs["watched"]["tensors"]
    assert run.histogram_counts["logged_gradients"] == run.histogram_counts["logged_parameters"] == n
    assert sorted(set(run.histograms["key"])) == sorted({f"{g}/{t}" for g in ("Gradients", "Weights")
                                                         for t in source.histograms["tensor"]})
    assert not any("non-numeric" in w for w in run.warnings) and "Gradients" not in run.history.columns
