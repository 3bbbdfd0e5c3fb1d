"""Verdicts that claim only what their evidence shows (issue 20), each on a run the W&B SDK writes here.

A GPU under-used without a sign of an input pipeline is left undetermined; one GPU sample gives no
GPU verdict; a real DataLoader with a slow transform is called input-bound with its evidence named;
a held-out Dice that collapses is an engineering verdict; hand-logged histograms feed the gradient
rules; a loss stuck at the label frequencies from the start is called wiring, and a run stopped by
Ctrl-C says so. GPU facts are added as a GPU host's SDK writes them (``gpu_host.py``): this machine
has no GPU. Runs are small and single-threaded (two shared cores).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from incidents.diagnosis import RULES, diagnose
from tests.helpers.gpu_host import add_gpu_host
from tests.helpers.wandb_runs import descend, load_run, offline_wandb, run_folder, sdk_run

# The module-scoped training runs are made once per worker: one xdist group keeps these tests on one worker.
pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.xdist_group("verdict_evidence")]
torch = pytest.importorskip("torch")
wandb = pytest.importorskip("wandb")


def _mlp(*widths: int):
    layers = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        layers.append(torch.nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def _full_batch_toy(root: Path, name: str, logged: int = 20, epochs: int = 100) -> Path:
    """A research toy: the whole data set is one resident tensor, many epochs per logged step, no loader."""
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = (x[:, 0] + x[:, 1] > 0).long()
    model = _mlp(8, 16, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with sdk_run(root, name, {"epochs_per_log": epochs, "device": "cuda", "full_batch": True},
                 project="verdicts") as run:
        for _ in range(logged):
            for _ in range(epochs):
                loss = descend(opt, torch.nn.functional.cross_entropy(model(x), y))
            run.log({"loss": loss})
    return run_folder(run)


class SlowDecode(torch.utils.data.Dataset):
    """Samples whose transform is slow host-side work (a per-item Python loop, as a hand-written decoder)."""

    def __init__(self, n: int = 480) -> None:
        gen = torch.Generator().manual_seed(2)
        self.x = torch.randn(n, 8, generator=gen)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        x = self.x[i]
        acc = 0.0
        for j in range(800):             # the slow transform
            acc += math.sin(j * 0.001 + float(x[0]))
        return x + acc * 0.0, int(x[0] > 0)


def _loader_bound(root: Path, trace: Path) -> Path:
    """A real DataLoader (num_workers=0) with a slow transform; the loop logs how long each batch took,
    and a torch.profiler capture of three steps is exported as a chrome trace."""
    torch.manual_seed(0)
    model = _mlp(8, 16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(SlowDecode(), batch_size=16, num_workers=0)
    batches = iter(loader)

    def step(run) -> None:
        started = time.perf_counter()
        xb, yb = next(batches)
        waited = time.perf_counter() - started
        run.log({"loss": descend(opt, torch.nn.functional.cross_entropy(model(xb), yb)), "data_time_s": waited})

    config = {"batch_size": 16, "num_workers": 0, "device": "cuda"}
    with sdk_run(root, "slow-loader", config, project="verdicts") as run:
        for _ in range(24):
            step(run)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                with torch.profiler.record_function("train_step"):
                    step(run)
    prof.export_chrome_trace(str(trace))
    return run_folder(run)


@pytest.fixture(scope="module")
def gpu_runs(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("verdicts")
    with offline_wandb(root):
        toy = _full_batch_toy(root, "full-batch-toy")
        add_gpu_host(toy, gpus=1, util=21.0, memory=5.0)
        once = _full_batch_toy(root, "one-sample", logged=8)
        add_gpu_host(once, gpus=1, util=21.0, memory=5.0, samples=1)
        trace = root / "slow-loader.trace.json"
        loader = _loader_bound(root, trace)
        add_gpu_host(loader, gpus=1, util=24.0, memory=30.0)
        wandb.teardown()
    return {"toy": load_run(toy), "once": load_run(once), "loader": load_run(loader), "trace": trace,
            "folders": {"toy": toy, "loader": loader}}


def _by_rule(findings):
    return {f.rule: f for f in findings}


def test_full_batch_toy_on_a_gpu_is_not_called_input_bound(gpu_runs):
    found = _by_rule(diagnose(gpu_runs["toy"]))
    assert [f.rule for f in found.values()] == list(RULES)
    bound = found["input_bound"]
    assert not bound.fired and bound.cls == "undetermined" and bound.confidence == 0.0
    assert bound.verdict.startswith("GPU under-used (2")
    assert "cause not determined" in bound.verdict and "input pipeline" in bound.verdict
    assert bound.evidence["gpu_samples"] >= 30 and f"{bound.evidence['gpu_samples']} steady-state samples" \
        in bound.verdict
    decide = " ".join(bound.evidence["would_decide"])
    assert "torch.profiler capture" in decide and "per-core CPU" in decide and "num_workers" in decide
    assert any("no profile attached" in e for e in bound.evidence["evidence_used"])
    assert not any(f.fired for f in found.values() if f.rule in ("model_not_on_gpu", "gpu_underused"))
    assert "likely starving" not in " ".join(f.verdict for f in found.values())


def test_one_gpu_sample_gives_no_utilisation_verdict(gpu_runs):
    found = _by_rule(diagnose(gpu_runs["once"]))
    for rule in ("model_not_on_gpu", "input_bound", "gpu_underused"):
        f = found[rule]
        assert not f.fired and f.cls == "healthy"
        assert f.verdict.startswith("Not checked: 1 steady-state GPU sample while the run trained")
        assert "needs at least 5" in f.verdict


def test_slow_dataloader_is_input_bound_with_its_evidence_named(gpu_runs):
    from incidents.evidence.profiler import inspect_profile

    run = gpu_runs["loader"]
    waits = run.history["data_time_s"].dropna()
    steps = run.history["step_time_s"].dropna()
    assert waits.median() > 0.5 * steps.median()                 # the transform really is the slow part
    bound = _by_rule(diagnose(run))["input_bound"]
    assert bound.fired and bound.cls == "engineering"
    assert bound.verdict.startswith("Input-bound: GPU utilisation averaged 2")
    assert "each step waited a median" in bound.verdict and "num_workers=0" in bound.verdict
    assert any(e.endswith("history data_time_s (median)") for e in bound.evidence["evidence_used"])
    assert any(e.endswith("config num_workers") for e in bound.evidence["evidence_used"])
    # The profiler capture is evidence of its own: time in DataLoader ranges within the profiled steps.
    trace = inspect_profile(gpu_runs["trace"]).to_dict()
    assert trace["steps"] == 3 and trace["input_share"] > 0.5
    profiled = _by_rule(diagnose(run, profile=trace, profile_source="slow-loader.trace.json"))["input_bound"]
    assert profiled.fired and profiled.confidence == 0.8
    assert "slow-loader.trace.json (input_share)" in profiled.evidence["evidence_used"]
    assert f"{trace['input_share'] * 100:.1f} % of the profiled steps was spent fetching batches" in profiled.verdict


def test_diagnose_json_keeps_its_shape_lists_evidence_and_an_undetermined_finding(gpu_runs):
    from click.testing import CliRunner

    from app.cli import cli

    result = CliRunner().invoke(cli, ["incident", "diagnose", str(gpu_runs["folders"]["toy"]), "--json"])
    assert result.exit_code == 0, result.output
    rules = json.loads(result.stdout)["diagnosis"]
    assert [d["rule"] for d in rules] == list(RULES)
    assert all(set(d) == {"rule", "fired", "class", "verdict", "evidence", "confidence"} for d in rules)
    assert all(d["evidence"].get("evidence_used") for d in rules if d["fired"])
    (open_,) = [d for d in rules if d["class"] == "undetermined"]
    assert open_["rule"] == "input_bound" and open_["fired"] is False and open_["evidence"]["would_decide"]
    loud = json.loads(CliRunner().invoke(cli, ["incident", "diagnose", str(gpu_runs["folders"]["loader"]),
                                               "--json"]).stdout)["diagnosis"]
    fired = [d for d in loud if d["fired"]]
    assert fired and all(d["evidence"]["evidence_used"] for d in fired)
