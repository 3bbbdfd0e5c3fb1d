"""Runs unlike the ones the rules were written against: CPU training on a GPU host, an RL run, evidence
from another setup. Each run is written by the real wandb SDK in offline mode and read back by our
importer.

The SDK writes system metrics only for the hardware it runs on, and this machine has no GPU: for the
CPU-on-a-GPU-host run we add the records a GPU host's SDK writes (``gpu_host.py``) to the SDK's own
file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from incidents.diagnosis import RULES, diagnose
from incidents.evidence.sample_data import REPRO_TINY
from tests.helpers.gpu_host import add_gpu_host
from tests.helpers.wandb_runs import descend, load_run, offline_wandb, run_folder, sdk_run

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")
wandb = pytest.importorskip("wandb")


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _train(root: Path, name: str, config: dict, steps: int = 60, watch: tuple[str, int] | None = None) -> Path:
    """A real CPU training loop logging its loss (and watch histograms when asked)."""
    torch.set_num_threads(1)
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    with sdk_run(root, name, config, project="held-out") as run:
        if watch:
            run.watch(model, log=watch[0], log_freq=watch[1], idx=0)
        for _ in range(steps):
            x = torch.randn(32, 8, generator=gen)
            run.log({"loss": descend(opt, torch.nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long()))})
    return run_folder(run)


def _add_idle_gpus(folder: Path, gpus: int = 2, util: float = 0.0, memory: float = 1.0) -> None:
    add_gpu_host(folder, gpus=gpus, util=util, memory=memory)


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("held-out")
    with offline_wandb(root):
        cpu = _train(root, "cpu-on-gpu-host", {"device": "cpu", "batch_size": 32})
        _add_idle_gpus(cpu)
        rl = _rl_run(root)
        watched = _train(root, "tiny-watched", {"batch_size": 32}, steps=20, watch=("all", 1))
        big_batch = _train(root, "baseline-batch-128", {"batch_size": 128}, steps=20)
        every10 = _train(root, "watched-every-10", {"batch_size": 32}, steps=40, watch=("all", 10))
        # A toy model on one A100 at ~22 %, its gradients watched rarely (every 60 steps: no watch cost).
        toy = _train(root, "toy-on-a100", {"batch_size": 32, "device": "cuda"}, steps=130, watch=("gradients", 60))
        _add_idle_gpus(toy, gpus=1, util=22.0, memory=30.0)
        wandb.teardown()
    return {"cpu": load_run(cpu), "rl": load_run(rl), "watched": load_run(watched),
            "big_batch": load_run(big_batch), "every10": load_run(every10), "toy": load_run(toy)}


def _rl_run(root: Path) -> Path:
    """PPO-style metrics: a policy loss that starts negative and climbs by ~70, a rising reward."""
    rng = np.random.default_rng(3)
    with sdk_run(root, "ppo-cartpole", {"algo": "ppo", "gamma": 0.99}, project="held-out") as run:
        for step in range(200):
            climb = 70 * step / 199
            run.log({"losses/policy_loss": -13.0 + climb + rng.normal(0, 3),
                     "losses/value_loss": 5.0 + rng.normal(0, 0.5),
                     "charts/episodic_return": 20 + step + rng.normal(0, 5),
                     "losses/entropy": 0.69 - step * 1e-3})
    return run_folder(run)


def _by_rule(findings):
    return {f.rule: f for f in findings}


def test_cpu_training_on_a_gpu_host_is_not_called_input_bound(held_out):
    run = held_out["cpu"]
    assert run.environment["gpu_count"] == 2 and "system.gpu.0.memoryAllocated" in run.system.columns
    found = _by_rule(diagnose(run))
    assert [f.rule for f in found.values()] == list(RULES)
    assert not found["input_bound"].fired
    assert "not on it" in found["input_bound"].verdict
    placed = found["model_not_on_gpu"]
    assert placed.fired and placed.verdict.startswith("The model is not on the GPU: 2 GPUs sat idle")
    assert "device=cpu" in placed.verdict
    assert placed.evidence["evidence_used"] == [placed.evidence["gpu_util_source"],
                                                placed.evidence["gpu_memory_source"]]
    assert not found["gpu_underused"].fired


def test_toy_model_on_a_big_gpu_is_under_used_with_low_confidence_not_input_bound(held_out):
    found = _by_rule(diagnose(held_out["toy"]))
    assert not found["input_bound"].fired and "workload is small for the device" in found["input_bound"].verdict
    assert not found["model_not_on_gpu"].fired
    under = found["gpu_underused"]
    assert under.fired and under.confidence == 0.3
    assert re.match(r"A model this size cannot fill this GPU: a 178-parameter model[;,].* at 2[23]\.\d % utilisation "
                    r"over 3\d steady-state samples on NVIDIA A100-SXM4-40GB\. Often expected", under.verdict)
    assert "not a defect" in under.verdict


def test_rl_run_with_negative_climbing_policy_loss_gets_no_supervised_rule(held_out):
    found = _by_rule(diagnose(held_out["rl"]))
    stuck = found["clean_but_stuck"]
    assert not stuck.fired
    assert "reinforcement-learning" in stuck.verdict and "losses/policy_loss" in stuck.verdict
    assert "shuffled or random labels" not in " ".join(f.verdict for f in found.values() if f.fired)


def test_progress_is_judged_on_range_and_noise_not_on_a_value_near_zero(held_out):
    from incidents.diagnosis.loss_progress import movement

    history = held_out["rl"].history
    m = movement(history["losses/policy_loss"].dropna())
    assert m["start"] < 0 < m["end"] and m["change"] > 50
    assert m["change"] > 10 * m["stderr"] and m["spread"] > 50


def test_a_profile_of_another_model_is_shown_as_another_setup_and_not_used(held_out):
    """The reproducer's BERT profile (41 tensors, 4.4M parameters) attached to a 4-tensor MLP run."""
    from incidents.writeups.report.build import build_incident_report
    from incidents.writeups.report.inputs import ProfileInput, ReportInput, RunInput

    profile = json.loads((REPRO_TINY / "profile.json").read_text())
    run = held_out["watched"]
    found = _by_rule(diagnose(run, None, profile, "bert-profile.json"))
    watch = found["watch_overhead"]
    assert watch.evidence["watch_share"] is None          # the profile's 77 % is not this run's
    assert "from a different setup" in watch.evidence["profile_note"]
    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", run),),
                                      profiles=(ProfileInput("bert-profile.json", profile),)))
    attribution = report.attributions[0]
    assert attribution.different_setup.startswith("From a different setup: 41 parameter tensors vs this run's 4")
    assert "4,387,726 parameters" in attribution.signature and 'log="all", log_freq=1' in attribution.watch
    assert not re.search(r"\b7[67](\.\d)? ?%", report.log_entry) and "watch hooks" not in report.log_entry
    assert "4M params" not in report.environment


def test_baseline_of_another_batch_size_is_listed_beside_the_slowdown(held_out):
    from incidents.writeups.report.build import build_incident_report
    from incidents.writeups.report.inputs import ReportInput, RunInput

    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", held_out["watched"]),
                                                       RunInput("baseline", held_out["big_batch"]))))
    slowdown = next(k for k in report.kpis if k.label.startswith("Slowdown"))
    assert slowdown.note == "Runs differ: batch size: 32 vs 128"
    assert not slowdown.before.missing                   # batch size alone does not forbid the ratio


def test_baseline_on_other_hardware_gives_no_slowdown_or_hours_lost(held_out):
    from dataclasses import replace

    from incidents.writeups.report.build import build_incident_report
    from incidents.writeups.report.inputs import ReportInput, RunInput

    # The same idle-GPU run, as if it had trained on its two A100s, against a baseline on a CPU host.
    on_gpus = replace(held_out["cpu"], config={**held_out["cpu"].config, "device": "cuda"})
    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", on_gpus),
                                                       RunInput("baseline", held_out["big_batch"]))))
    kpis = {k.label.split(" (")[0]: k for k in report.kpis}
    assert kpis["Slowdown"].before.missing and "device type: cuda vs cpu" in kpis["Slowdown"].before.text
    assert "batch size: 32 vs 128" in kpis["Slowdown"].note
    assert next(k for k in report.kpis if "lost" in k.label).before.missing
    assert "×" not in report.log_entry.split(";")[1]


def _traced(tmp_path: Path, steps: int = 3) -> Path:
    """A real torch.profiler trace of a watched MLP: wandb's per-tensor work labelled, steps as train_step."""
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with offline_wandb(tmp_path), sdk_run(tmp_path, "traced", project="held-out") as run:
        run.watch(model, log="all", log_freq=1, idx=0)
        history = run._torch
        original = history.log_tensor_stats

        def labelled(tensor, name):
            with torch.profiler.record_function("wandb.log_tensor_stats"):
                original(tensor, name)

        history.log_tensor_stats = labelled
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                with torch.profiler.record_function("train_step"):
                    run.log({"loss": descend(opt, model(torch.randn(4, 8)).sum())})
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    return trace


def test_trace_with_labelled_ranges_gives_steps_and_watch_configuration(tmp_path):
    from incidents.evidence.profiler import inspect_profile

    trace = _traced(tmp_path)
    result = inspect_profile(trace).to_dict()
    assert result["steps"] == 3 and result["step_label"] == "train_step"
    from click.testing import CliRunner

    from app.cli import cli

    text = CliRunner().invoke(cli, ["profile", "inspect", str(trace)]).output
    assert "3 steps (labelled train_step)" in text
    assert "watch: 24 wandb.log_tensor_stats ranges; log_freq 1, 8 histograms per logging step" in text
    assert result["watch"]["ranges"] == 3 * 8 and result["watch"]["log_freq"] == 1
    assert result["watch"]["histograms_per_logging_step"] == 8      # 4 tensors × (gradients + parameters)
    assert not any("No wandb.watch ranges are labelled" in w for w in result["warnings"])
    assert result["watch_ms"] > 0


def test_a_trace_of_another_watch_configuration_is_scaled_and_called_an_estimate(held_out, tmp_path):
    """The run logged every 10 steps; the trace was taken at log_freq=1: its share is not the run's."""
    from incidents.evidence.profiler import inspect_profile

    trace = inspect_profile(_traced(tmp_path)).to_dict()
    run = held_out["every10"]
    found = _by_rule(diagnose(run, None, trace, "trace.json"))
    ev = found["watch_overhead"].evidence
    assert ev["histogram_interval_steps"] == 10
    assert "trace.json was taken with log_freq=1" in ev["profile_note"] and "own timing" in ev["profile_note"]
    per_histogram = trace["watch_ms"] / trace["watch"]["logging_steps"] / 8
    step_ms = run.history["step_time_s"].dropna().median() * 1000
    # Scaled: the trace's cost per histogram × 8 histograms every 10 steps, over this run's own step time.
    assert ev["share_is_estimate"] is True and ev["watch_share_source"].startswith("estimate:")
    assert ev["watch_share"] == pytest.approx(min(1.0, per_histogram * 0.8 / step_ms), rel=1e-6)
    assert ev["watch_share"] != pytest.approx(trace["watch_share"])
    assert re.search(r"history step_time_s \(median of \d+\)$", ev["mean_step_source"])


def test_with_a_comparable_baseline_the_runs_own_timing_replaces_the_profiles_share(held_out, tmp_path):
    """Step times set through the reproducer's summary key (its median) so the arithmetic is exact."""
    from dataclasses import replace

    from incidents.evidence.profiler import inspect_profile

    trace = inspect_profile(_traced(tmp_path)).to_dict()
    run = replace(held_out["every10"], summary={"repro/median_step_s": 0.30})
    base = replace(held_out["cpu"], summary={"repro/median_step_s": 0.24})
    ev = _by_rule(diagnose(run, base, trace, "trace.json"))["watch_overhead"].evidence
    assert ev["watch_share"] == pytest.approx(0.2) and ev["share_is_estimate"] is False
    assert ev["watch_share_source"].startswith("this run's own timing")
    assert ev["slowdown"] == pytest.approx(1.25)
