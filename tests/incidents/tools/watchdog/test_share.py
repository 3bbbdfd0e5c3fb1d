"""The watchdog's watch share (issue 20): an estimate is called one, the run's own steps are used when
they can tell, and a cap is never passed off as a measurement. Runs are written by the W&B SDK here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.incidents.wandb_runs import load_run, offline_wandb

pytestmark = [pytest.mark.torch, pytest.mark.slow]
torch = pytest.importorskip("torch")
wandb = pytest.importorskip("wandb")


def _watched(root: Path, name: str, log_freq: int, steps: int) -> Path:
    """A model with one large layer (so its histograms cost something), watched with log="all"."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 2))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    run = wandb.init(project="watchdog-share", name=name, dir=str(root), mode="offline",
                     settings=wandb.Settings(silent=True, console="off", x_disable_stats=True))
    try:
        run.watch(model, log="all", log_freq=log_freq, idx=0)
        for _ in range(steps):
            x = torch.randn(4, 64)
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.log({"loss": loss.item()})
        folder = Path(run.dir).parent
    finally:
        run.finish()
    return folder


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("share")
    with offline_wandb(root):
        every5 = _watched(root, "every-5", 5, 40)
        every1 = _watched(root, "every-1", 1, 12)
        wandb.teardown()
    return {"every5": load_run(every5), "every1": load_run(every1)}


def test_share_comes_from_the_runs_own_steps_when_watch_skips_some(watched):
    from incidents.tools.audit.cost import load
    from incidents.tools.watchdog import observe

    run = watched["every5"]
    seen = observe(run, load())
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
    assert seen.finding.fired and "an estimated at least 90% of step time" in seen.finding.verdict
    assert ev["predicted_step_s"] is None and ev["predicted_source"].startswith("not predicted")
    assert "No step time without it is predicted" in seen.finding.verdict
