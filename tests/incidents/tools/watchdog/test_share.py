"""The watchdog's watch share (issue 20): an estimate is called one, the run's own steps are used when
they can tell, and a cap is never passed off as a measurement. Runs are written by the W&B SDK here.

A CPU calibration is CPU time, so the share divides it by the step's CPU time where the run records
its process's CPU share (W&B ``system.cpu``), and a GPU run gets no share from CPU figures. The runs
here are written with the SDK's system stats off; the tests add the ``stats`` records a busier machine's
SDK writes (and a GPU host's, ``gpu_host.py``), so the share they lead to is known.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.wandb_runs import descend, load_run, offline_wandb, run_folder, sdk_run

pytestmark = [pytest.mark.torch, pytest.mark.slow]
torch = pytest.importorskip("torch")
wandb = pytest.importorskip("wandb")


def _watched(root: Path, name: str, log_freq: int, steps: int) -> Path:
    """A model with one large layer (so its histograms cost something), watched with log="all"."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 2))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with sdk_run(root, name, project="watchdog-share") as run:
        run.watch(model, log="all", log_freq=log_freq, idx=0)
        for _ in range(steps):
            run.log({"loss": descend(opt, model(torch.randn(4, 64)).pow(2).mean())})
    return run_folder(run)


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("share")
    with offline_wandb(root):
        every5 = _watched(root, "every-5", 5, 40)
        every1 = _watched(root, "every-1", 1, 12)
        wandb.teardown()
    return {"every5": load_run(every5), "every1": load_run(every1), "folders": {"every5": every5, "every1": every1}}


def _copy(watched, name: str, tmp_path: Path) -> Path:
    folder = tmp_path / watched["folders"][name].name
    shutil.copytree(watched["folders"][name], folder)
    return folder


def _add_process_cpu(folder: Path, percent: float, logical_cpus: int = 4, samples: int = 4) -> None:
    """What an SDK with system stats on writes: the machine's CPU counts, and ``cpu`` stats (the process's
    CPU percent ÷ the logical CPUs) spread over the time the run trained."""
    import numpy as np
    from wandb.proto import wandb_internal_pb2 as pb

    from tests.helpers.gpu_host import _rewrite

    stamps = load_run(folder).history["_timestamp"].dropna()
    env = pb.Record()
    env.environment.cpu_count, env.environment.cpu_count_logical = logical_cpus // 2, logical_cpus
    extra = [env.SerializeToString()]
    for t in np.linspace(float(stamps.iloc[0]), float(stamps.iloc[-1]), samples + 2)[1:-1]:
        st = pb.Record()
        st.stats.timestamp.FromNanoseconds(int(t * 1e9))
        item = st.stats.item.add()
        item.key, item.value_json = "cpu", json.dumps(percent)
        extra.append(st.SerializeToString())
    _rewrite(folder, extra)


def _cpu_calibration(run, share: float):
    """A CPU-time calibration that predicts ``share`` of this run's mean wall step (per-element cost only)."""
    from incidents.diagnosis import signals
    from incidents.tools.audit.cost import Calibration

    stats = signals.histogram_stats(run.histograms)
    elements = sum(int(stats[stats["kind"] == k].groupby("tensor")["total"].max().sum()) for k in ("gradients",
                                                                                                  "parameters"))
    step_s, _ = signals.mean_step_time(run)
    path = {"per_element_ns": share * step_s / elements * 1e9, "per_tensor_us": 0.0, "clock": "thread CPU time"}
    return Calibration({"devices": {"cpu": {"gradients": path, "parameters": path}}}, "a CPU-time calibration")


def test_share_comes_from_the_runs_own_steps_when_watch_skips_some(watched):
    from incidents.tools.audit.cost import load_calibration
    from incidents.tools.watchdog import observe

    run = watched["every5"]
    seen = observe(run, load_calibration())
    ev = seen.finding.evidence
    assert ev["share_is_estimate"] is True
    assert ev["watch_share_source"].startswith("estimate from this run's own steps: median ")
    times = run.history["step_time_s"].dropna()
    times = times[times > 0]
    logged = times.index.isin(run.histograms["step"].unique())
    plain, mean = times[~logged].median(), times.mean()
    assert times[logged].median() > plain                               # histogram steps really are slower
    assert seen.estimated_share == pytest.approx((mean - plain) / mean)
    # The step time without watch is the run's own steps without histograms, not a capped fraction.
    assert seen.finding.fired and ev["predicted_step_s"] == pytest.approx(plain)
    assert "an estimated" in seen.finding.verdict and "Estimated mean step time without it" in seen.finding.verdict


def test_a_capped_calibration_estimate_is_called_a_lower_bound_and_predicts_nothing(watched):
    from incidents.tools.audit.cost import Calibration
    from incidents.tools.watchdog import observe

    # A calibration from a far slower machine: it predicts more histogram time than the whole step.
    slow = {"devices": {"cpu": {kind: {"per_element_ns": 1e4, "per_tensor_us": 1e5}
                                for kind in ("gradients", "parameters")}}}
    seen = observe(watched["every1"], Calibration(slow, "a slower machine's calibration"))
    ev = seen.finding.evidence
    assert seen.estimated_share == 0.9 and ev["share_is_estimate"] is True
    assert "capped at 90% (a lower bound)" in ev["watch_share_source"]
    assert seen.finding.fired and "an estimated at least 90.0 % of step time" in seen.finding.verdict
    assert ev["predicted_step_s"] is None and ev["predicted_source"].startswith("not predicted")
    assert "No step time without it is predicted" in seen.finding.verdict


def test_a_busy_machines_wall_step_is_not_compared_with_cpu_time(watched, tmp_path):
    """The hooks' CPU time is 15 % of the wall step: no alert. The run records that its process had half of
    a core (a busy machine), so its steps' CPU time is half their wall time and the hooks take 30 % of it."""
    from incidents.tools.watchdog import observe

    quiet = observe(watched["every1"], _cpu_calibration(watched["every1"], 0.15))
    assert quiet.estimated_share == pytest.approx(0.15) and not quiet.finding.fired
    assert "wall clock: the run has recorded no CPU share of its process yet" in \
        quiet.finding.evidence["watch_share_source"] and "lower bound" in quiet.finding.evidence["watch_share_source"]

    folder = _copy(watched, "every1", tmp_path)
    _add_process_cpu(folder, 12.5)                              # 12.5 % of 4 logical CPUs: half a core
    busy = load_run(folder)
    assert busy.environment["cpu_count_logical"] == 4
    seen = observe(busy, _cpu_calibration(watched["every1"], 0.15))
    ev = seen.finding.evidence
    assert seen.estimated_share == pytest.approx(0.30) and ev["share_is_estimate"] is True
    assert ev["watch_share_source"].startswith("estimate: ") and "CPU time per step" in ev["watch_share_source"]
    assert "0.50 of a core the training process used, W&B system.cpu × cpu_count, 4 samples" in ev["watch_share_source"]
    assert seen.finding.fired and "an estimated 30.0 % of step time" in seen.finding.verdict


def test_a_process_using_a_whole_core_is_compared_by_wall_time(watched, tmp_path):
    from incidents.tools.watchdog import observe

    folder = _copy(watched, "every1", tmp_path)
    _add_process_cpu(folder, 37.5)                              # 1.5 cores: no waiting for a CPU to tell
    seen = observe(load_run(folder), _cpu_calibration(watched["every1"], 0.15))
    assert seen.estimated_share == pytest.approx(0.15) and not seen.finding.fired
    assert "used 1.50 cores" in seen.finding.evidence["watch_share_source"]


def test_a_gpu_run_gets_no_share_from_cpu_figures(watched, tmp_path):
    from incidents.tools.audit.cost import Calibration, load_calibration
    from incidents.tools.watchdog import observe
    from tests.helpers.gpu_host import add_gpu_host

    cpu_only = load_calibration()
    assert cpu_only.devices() == ["cpu"]
    folder = _copy(watched, "every1", tmp_path)
    add_gpu_host(folder, gpus=1, util=10.0)
    gpu_run = load_run(folder)
    seen = observe(gpu_run, cpu_only)
    ev = seen.finding.evidence
    assert seen.estimated_share is None and ev["watch_share"] is None and not seen.finding.fired
    assert ev["watch_share_unavailable"].startswith("not estimated from the calibration: this run trains on cuda and "
                                                    "the calibration has no cuda figures (the CPU figures do not "
                                                    "apply to a GPU run)")
    # With GPU figures (a wall-clock calibration) the GPU run is estimated against its wall step.
    path = {"per_element_ns": 1e4, "per_tensor_us": 0.0, "clock": "wall time"}
    gpu = Calibration({"devices": {"cpu": cpu_only.document["devices"]["cpu"],
                                   "cuda": {"gradients": path, "parameters": path}}}, "a GPU calibration")
    estimated = observe(gpu_run, gpu)
    assert estimated.estimated_share is not None and "watch_share_unavailable" not in estimated.finding.evidence
    assert "watch calibration on cuda" in estimated.finding.evidence["watch_share_source"]

    # The run's own steps still tell when watch skips some, GPU or not.
    skips = _copy(watched, "every5", tmp_path)
    add_gpu_host(skips, gpus=1, util=10.0)
    own = observe(load_run(skips), cpu_only)
    assert own.estimated_share is not None and "watch_share_unavailable" not in own.finding.evidence
    assert own.finding.evidence["watch_share_source"].startswith("estimate from this run's own steps")
