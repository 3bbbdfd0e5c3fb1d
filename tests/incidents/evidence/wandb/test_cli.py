"""``hourtab wandb inspect`` on real runs, and refusals with exit status 2."""

from __future__ import annotations

import json
import zipfile

import pytest
from click.testing import CliRunner

from app.cli import cli

SHAPE = {"kind", "run_id", "name", "project", "steps", "runtime_s", "metrics", "system_metrics",
         "gpu_utilization", "environment", "histograms", "warnings",
         # added by issue 20 (fields are added, never renamed or removed)
         "logged_histograms", "media", "ending"}


@pytest.mark.torch
def test_inspect_json_on_an_offline_run_folder(wandb_runs):
    import platform

    import wandb

    expected = wandb_runs["watched"]
    result = CliRunner().invoke(cli, ["wandb", "inspect", str(expected["dir"]), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == SHAPE
    assert data["kind"] == "run" and data["run_id"] == expected["run_id"] and data["name"] == "watched"
    assert data["steps"] == expected["steps"] and data["metrics"] == expected["metrics"]
    n = expected["tensors"] * 4
    assert data["histograms"] == {"gradients": n, "parameters": n, "steps": [4, 9, 14, 19]}
    env = data["environment"]
    assert env["python"].endswith(platform.python_version()) and env["cpu"] and env["wandb"] == wandb.__version__
    assert data["gpu_utilization"] == {} and data["warnings"] == []


@pytest.mark.torch
def test_inspect_wandb_dir_reads_latest_run_and_system_metrics(wandb_runs):
    wandb_dir = wandb_runs["watched"]["dir"].parent
    result = CliRunner().invoke(cli, ["wandb", "inspect", str(wandb_runs["plain <script>alert(1)</script>"]["dir"])])
    assert result.exit_code == 0 and "steps: 30" in result.output
    result = CliRunner().invoke(cli, ["wandb", "inspect", str(wandb_dir), "--json"])
    assert json.loads(result.stdout)["run_id"] == wandb_runs["watched"]["run_id"]     # latest-run


def test_inspect_refuses_hostile_archive_with_exit_2(tmp_path):
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("../../escape.txt", "x")
    result = CliRunner().invoke(cli, ["wandb", "inspect", str(path), "--json"])
    assert result.exit_code == 2 and "outside the archive" in result.output
    assert not (tmp_path.parent / "escape.txt").exists()


def test_inspect_refuses_non_export_csv_with_exit_2(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    result = CliRunner().invoke(cli, ["wandb", "inspect", str(path)])
    assert result.exit_code == 2 and "not a W&B export" in result.output and "Step" in result.output


@pytest.mark.torch
def test_inspect_reads_a_zipped_run_folder(wandb_runs, tmp_path):
    run_dir = wandb_runs["watched"]["dir"]
    path = tmp_path / "run.zip"
    with zipfile.ZipFile(path, "w") as z:
        for f in run_dir.rglob("*"):
            if f.is_file() and not f.is_symlink():
                z.write(f, f"wandb/{run_dir.name}/{f.relative_to(run_dir)}")
    result = CliRunner().invoke(cli, ["wandb", "inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["histograms"]["steps"] == [4, 9, 14, 19]
