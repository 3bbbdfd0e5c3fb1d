"""Public-API exports (CSV/JSON/JSONL/Parquet, history and system streams) and UI chart CSVs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from incidents.errors import InvalidEvidence
from incidents.evidence.wandb import load_run, load_runs

DATA = Path(__file__).resolve().parents[3] / "data"


def _api_history(run) -> pd.DataFrame:
    """What ``run.history()`` returns for the same run: one row per step, histogram dict cells."""
    table = run.history.drop(columns=["step_time_s"]).reset_index()
    for key, group in run.histograms.groupby("key"):
        cells = {int(s): {"_type": "histogram", "bins": b.tolist(), "values": c.tolist()}
                 for s, b, c in zip(group["step"], group["bins"], group["counts"], strict=True)}
        table[key] = [cells.get(int(s)) for s in table["_step"]]
    return table


@pytest.fixture(scope="module")
def watched(wandb_runs):
    return load_run(wandb_runs["watched"]["dir"])


@pytest.mark.torch
@pytest.mark.parametrize("fmt", ["csv", "json-records", "json-columns", "jsonl", "parquet"])
def test_history_exports_round_trip(watched, tmp_path, fmt):
    table = _api_history(watched)
    path = tmp_path / f"history.{fmt.split('-')[0]}"
    if fmt == "csv":
        table.to_csv(path, index=False)
    elif fmt == "json-records":
        table.to_json(path, orient="records")
    elif fmt == "json-columns":
        table.to_json(path)
    elif fmt == "jsonl":
        table.to_json(path, orient="records", lines=True)
    else:
        table.to_parquet(path)
    run = load_run(path)
    assert run.kind == "history_export" and run.steps == watched.steps
    assert run.metrics == watched.metrics
    assert np.allclose(run.history["train/loss"], watched.history["train/loss"])
    assert run.history["eval/score"].notna().sum() == watched.history["eval/score"].notna().sum()
    assert run.histogram_counts == watched.histogram_counts
    assert sorted(set(run.histograms["step"])) == sorted(set(watched.histograms["step"]))
    counts = run.histograms.set_index(["key", "step"])["counts"]
    for key, step, c in zip(watched.histograms["key"], watched.histograms["step"], watched.histograms["counts"], strict=True):
        assert np.array_equal(counts[(key, step)], c)


@pytest.mark.torch
def test_system_stream_export(wandb_runs, tmp_path):
    run = load_run(wandb_runs["plain <script>alert(1)</script>"]["dir"])
    table = run.system.reset_index()
    table["system.gpu.0.gpu"] = np.linspace(0, 100, len(table))       # the stream's GPU column layout
    path = tmp_path / "system.csv"
    table.to_csv(path, index=False)
    got = load_run(path)
    assert got.kind == "system_export" and got.steps == 0
    assert len(got.system) == len(run.system)
    assert set(got.system_metrics) == set(run.system_metrics) | {"system.gpu.0.gpu"}
    assert np.allclose(got.system["system.cpu"].to_numpy(), run.system["system.cpu"].to_numpy(), equal_nan=True)


def test_ui_chart_csv_with_several_runs_and_a_group():
    runs = load_runs(DATA / "wandb_ui_chart_export.csv")
    assert [r.name for r in runs] == ["bert-baseline", "watch <b>all</b>", "sweep-a"]
    assert runs[2].tags == ["group"] and all(r.kind == "ui_csv" for r in runs)
    base = runs[0]
    assert list(base.history.index) == [0, 10, 20, 30]
    assert base.history.loc[20, "train/loss__MAX"] == 2.20
    assert base.metrics == ["train/loss", "train/loss__MIN", "train/loss__MAX"]
    assert list(runs[1].history.index) == [0, 20, 30]            # empty cells: no row for that run
    first = load_run(DATA / "wandb_ui_chart_export.csv")
    assert first.name == "bert-baseline" and "holds 3 runs" in first.warnings[-1]


def test_csv_that_is_not_a_wandb_export_is_refused_naming_expected_columns(tmp_path):
    path = tmp_path / "timesheet.csv"
    path.write_text("Date,Project,Hours\n2024-01-02,Acme,3.5\n")
    with pytest.raises(InvalidEvidence) as e:
        load_run(path)
    message = str(e.value)
    assert "'Step'" in message and "<run name> - <metric>" in message and "_step, _runtime, _timestamp" in message
    assert "'Date', 'Project', 'Hours'" in message


def test_json_that_is_not_a_table_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(InvalidEvidence):
        load_run(path)
