"""One slowdown per report, and the log entry's clauses read as the evidence says (issue 20).

The reproducer's shipped tiny-preset runs (written by the W&B SDK) give the case where the verdict,
the KPI strip and the log entry must state the very same figure; small frames built here give the
cases the sample cannot (a baseline and a fixed run of different speeds, runs of different batch).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from incidents.evidence.sample_data import REPRO_TINY, repro_tiny_runs
from incidents.evidence.wandb import load_run
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.environment import environment_line
from incidents.writeups.report.inputs import ProfileInput, ReportInput, RunInput

DATA = Path(__file__).resolve().parents[3] / "data"


@pytest.fixture(scope="module")
def sample():
    runs = {mode: load_run(path) for mode, path in repro_tiny_runs().items()}
    return runs, json.loads((REPRO_TINY / "profile.json").read_text())


def _ratios(text: str) -> list[str]:
    return re.findall(r"\d+\.\d+×", text)


def test_kpi_verdict_and_log_entry_state_the_same_slowdown(sample):
    runs, profile = sample
    # The run without watch is both the baseline and, here, the fixed run (it is what the fix makes).
    report = build_incident_report(ReportInput(title="throughput", runs=(
        RunInput("incident", runs["watch:all:1"]), RunInput("baseline", runs["baseline"]),
        RunInput("fixed", runs["baseline"])), profiles=(ProfileInput("profile.json", profile),)))
    kpi = next(k for k in report.kpis if k.label.startswith("Slowdown"))
    assert kpi.label == "Slowdown (incident ÷ baseline, median step)"
    incident, baseline = (runs[m].summary["repro/median_step_s"] for m in ("watch:all:1", "baseline"))
    assert kpi.before.value == pytest.approx(incident / baseline)
    watch = next(f for f in report.fired if f.rule == "watch_overhead")
    assert watch.evidence["slowdown"] == pytest.approx(kpi.before.value)
    assert f"steps are {kpi.before.text} slower than the baseline" in watch.verdict
    paragraph = report.log_entry.splitlines()[0]
    assert f"steps {kpi.before.text} slower than baseline" in paragraph
    # Every other ratio the entry states is labelled as what it is.
    others = [r for r in _ratios(paragraph) if r != kpi.before.text]
    assert len(others) == 1 and f"(whole-run ratio {others[0]})" in paragraph
    assert _ratios(watch.verdict) == [kpi.before.text]


def _run(run_id: str, step_s: float, steps: int = 50, config: dict | None = None, **metrics) -> RunEvidence:
    index = pd.Index(range(steps), name="_step")
    history = pd.DataFrame({"_runtime": 3.0 + np.arange(steps) * step_s, "loss": np.linspace(2.0, 1.0, steps),
                            "step_time_s": [np.nan] + [step_s] * (steps - 1), **metrics}, index=index)
    return RunEvidence(run_id=run_id, name=run_id, project="acme", history=history, runtime_s=steps * step_s + 9.0,
                       config=config or {}, environment={"python": "CPython 3.11.7", "torch": "2.13.0"})


def test_the_fixed_run_is_not_a_second_slowdown():
    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", _run("slow", 0.4)),
                                                       RunInput("baseline", _run("plain", 0.2)),
                                                       RunInput("fixed", _run("quick", 0.1)))))
    kpi = next(k for k in report.kpis if k.label.startswith("Slowdown"))
    assert kpi.before.text == "2.00×" and "baseline" in kpi.label
    paragraph = report.log_entry.splitlines()[0]
    assert "steps 2.00× slower than baseline (400.0 ms vs 200.0 ms, median)" in paragraph
    assert "4.00×" not in paragraph and "4.00×" not in " ".join(k.before.text for k in report.kpis)
    # Whole-run time is the history's training span (49 step intervals), not the runtime with start-up.
    assert "training span 19.6 s for 49 steps against 9.8 s at the baseline's median step (whole-run ratio 2.0×)" \
        in paragraph
    runtime = next(k for k in report.kpis if k.label.startswith("Training span"))
    assert runtime.before.text == "19.6 s" and "training span" in runtime.before.source


def test_hours_lost_need_the_same_batch_and_sequence():
    lost = {}
    for batch in (32, 64):
        report = build_incident_report(ReportInput(title="t", runs=(
            RunInput("incident", _run("slow", 0.4, config={"batch_size": 32, "seq_len": 128})),
            RunInput("baseline", _run("plain", 0.2, config={"batch_size": batch, "seq_len": 128})))))
        lost[batch] = next(k for k in report.kpis if "lost" in k.label)
    assert lost[32].before.value == pytest.approx((19.6 - 9.8) / 3600)
    assert lost[64].before.missing and lost[64].before.text == "not computed: the runs differ in batch size: 32 vs 64"


def test_outcome_clause_prefers_the_held_out_metric():
    steps = 50
    val = {"val/accuracy": [np.nan] * (steps - 1) + [0.91]}
    fixed_val = {"val/accuracy": [np.nan] * (steps - 1) + [0.92]}
    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", _run("slow", 0.4, **val)),
                                                       RunInput("fixed", _run("quick", 0.1, **fixed_val)))))
    paragraph = report.log_entry.splitlines()[0]
    assert "changed final val/accuracy (held out): 0.91 at step 49 before, 0.92 at step 49 after" in paragraph
    assert "loss" not in paragraph.split("[3]")[-1]
    row = next(r for r in report.verification if r.label.startswith("Final"))
    assert row.label == "Final val/accuracy (held-out metric)"
    assert row.before.text == "0.91 at step 49" and row.after.text == "0.92 at step 49"


def test_diagnosis_date_is_the_run_without_watch_not_when_the_profile_was_built(sample):
    runs, profile = sample
    rebuilt = {**profile, "created_at": "2026-12-07T09:00:00Z"}     # profile.json written again a week later
    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", runs["watch:all:1"]),),
                                      profiles=(ProfileInput("profile.json", rebuilt),)))
    paragraph = report.log_entry.splitlines()[0]
    base = next(m for m in profile["modes"] if m["mode"] == "baseline")
    assert base["wandb_run"]["dir"].startswith("wandb/offline-run-20261130_")
    assert "diagnosed 30 November 2026 by null-hypothesis test" in paragraph and "2026-12-07" not in paragraph
    assert "profile.json · mode baseline wandb_run" in report.log_entry


def test_hardware_reads_right():
    gpu = RunEvidence(run_id="g", environment={"gpu_name": "NVIDIA A100 80GB PCIe", "gpu_count": 1,
                                                "gpu_memory_bytes": 85899345920})
    line = environment_line(ReportInput(title="t", runs=(RunInput("incident", gpu),)))
    assert line == "NVIDIA A100 80GB PCIe"
    sized = RunEvidence(run_id="h", environment={"gpu_name": "NVIDIA H100", "gpu_count": 8,
                                                  "gpu_memory_bytes": 85899345920})
    assert environment_line(ReportInput(title="t", runs=(RunInput("incident", sized),))) == "8× NVIDIA H100 80 GB"
    cpu = RunEvidence(run_id="c", config={"torch_threads": 4}, environment={"cpu": "AMD EPYC", "cpu_count": 16})
    assert environment_line(ReportInput(title="t", runs=(RunInput("incident", cpu),))) == \
        "CPU AMD EPYC (16 cores, torch 4 threads)"


def test_apple_gpu_is_read_from_the_sdk_environment(tmp_path):
    import wandb

    from tests.helpers.gpu_host import add_apple_host
    from tests.helpers.wandb_runs import offline_wandb

    with offline_wandb(tmp_path):
        run = wandb.init(project="verdicts", dir=str(tmp_path), mode="offline",
                         settings=wandb.Settings(silent=True, console="off", x_disable_stats=True))
        for i in range(3):
            run.log({"loss": 1.0 / (i + 1)})
        folder = Path(run.dir).parent
        run.finish()
        add_apple_host(folder)
        wandb.teardown()
    evidence = load_run(folder)
    assert evidence.environment["apple_gpu"] == "Apple M2 Pro, 19-core GPU" and "gpu_name" not in evidence.environment
    assert "Apple M2 Pro, 19-core GPU" in environment_line(ReportInput(title="t", runs=(RunInput("incident",
                                                                                                   evidence),)))


def test_a_wandb_0_10_run_folder_gives_its_version_and_hardware(tmp_path):
    source = DATA / "wandb_legacy" / "run-20220122_015353-26zcec67"
    folder = tmp_path / "wandb" / source.name
    shutil.copytree(source, folder)
    run = load_run(folder)
    assert run.environment["wandb"] == "0.10.20"           # from config.yaml's _wandb entry
    assert run.environment["gpu_name"] == "Tesla T4" and run.environment["cpu_count"] == 32
    assert run.config["arch"] == "vgg16_cifar" and "_wandb" not in run.config
    assert run.started_at == dt.datetime(2022, 1, 22, 6, 53, 53, 192124, tzinfo=dt.UTC)
    assert environment_line(ReportInput(title="t", runs=(RunInput("incident", run),))).startswith("wandb 0.10.20")
