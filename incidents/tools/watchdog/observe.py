"""What a (possibly unfinished) run shows so far, and the watch-overhead rule applied to it.

A live run has no baseline and no profile yet, so the share of step time spent in watch work is
estimated, and called an estimate (``share_is_estimate``). When watch logs every few steps the run
itself tells: its steps that logged histograms against those that did not (the difference is the
histogram work, the steps without it are the step time without watch). When it logs every step,
the histograms logged so far give the elements and tensors per logging step, the watch calibration
(``hourtab repro --calibrate``, or the shipped default) their cost, and the run's own steps the step;
a prediction above ``MAX_SHARE`` of the step is capped and said to be. The estimate is handed to the
diagnosis's own ``watch_overhead`` rule, so the verdict reads exactly as in the incident report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from incidents.diagnosis import signals
from incidents.diagnosis.findings import Finding
from incidents.diagnosis.overhead import MAX_SHARE, watch_overhead
from incidents.diagnosis.subject import Subject
from incidents.tools.audit.cost import Calibration, predict

#: Steps of each kind (with and without histograms) the run's own estimate needs.
MIN_OWN_STEPS = 3


@dataclass(frozen=True)
class Observation:
    """One look at a run: progress figures and the rule's outcome."""

    run_id: str
    state: str
    steps: int
    last_step: int | None
    step_s: float | None
    histogram_steps: int
    histogram_interval: int | None
    tensors: int
    gpu_util: float | None
    estimated_share: float | None
    finding: Finding

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "state": self.state, "steps": self.steps, "last_step": self.last_step,
                "step_s": self.step_s, "histogram_steps": self.histogram_steps,
                "histogram_interval_steps": self.histogram_interval, "tensors": self.tensors,
                "gpu_util_mean": self.gpu_util, "estimated_watch_share": self.estimated_share,
                "finding": self.finding.to_dict()}


def _estimate_share(stats: Any, calibration: Calibration, interval: int | None, step_s: float | None,
                    device: str) -> tuple[float | None, str | None]:
    """Predicted watch seconds per step ÷ measured seconds per step.

    Capped at 0.9: a calibration measured on a busier or slower machine can predict more than the
    whole step, and the rule should then read "most of the step", not "all of it".
    """
    if stats.empty or not interval or not step_s:
        return None, None
    seconds = 0.0
    for kind in ("gradients", "parameters"):
        rows = stats[stats["kind"] == kind]
        if rows.empty:
            continue
        first = rows.sort_values("step").groupby("tensor", sort=False)["total"].max()
        cost = predict(calibration, kind, interval, int(first.sum()), len(first), device, 1)
        seconds += cost.per_step_s
        device = cost.device
    share = min(seconds / step_s, MAX_SHARE)
    capped = seconds / step_s > MAX_SHARE
    return share, (f"estimate: {seconds:.3g} s of histograms per step (the logged histograms' size × the "
                   f"watch calibration on {device}: {calibration.origin}) ÷ mean step time {step_s:.3g} s"
                   + (f"; the calibration predicts {seconds / step_s:.0%} of the step, more than it can be, so "
                      f"the share is capped at {MAX_SHARE:.0%} (a lower bound)" if capped else ""))


def own_steps_share(run: Any, stats: Any) -> tuple[float | None, str | None]:
    """Watch share from the run's own steps: (mean step − median step without histograms) ÷ mean step.

    Histograms land on the step whose backward pass computed them, so a step that logged some took
    their cost and one that did not is the step without watch. Needs ``MIN_OWN_STEPS`` of each.
    """
    history = getattr(run, "history", None)
    if stats.empty or history is None or "step_time_s" not in history.columns:
        return None, None
    times = pd.to_numeric(history["step_time_s"], errors="coerce").dropna()
    times = times[times > 0]
    logged = times.index.isin(stats["step"].unique())
    with_h, without = times[logged], times[~logged]
    if len(with_h) < MIN_OWN_STEPS or len(without) < MIN_OWN_STEPS:
        return None, None
    mean, plain = float(times.mean()), float(without.median())
    share = min(max(0.0, (mean - plain) / mean), MAX_SHARE)
    return share, (f"estimate from this run's own steps: median {float(with_h.median()):.3g} s for the "
                   f"{len(with_h)} steps that logged histograms, {plain:.3g} s for the {len(without)} that did "
                   f"not; (mean step {mean:.3g} s − {plain:.3g} s) ÷ {mean:.3g} s")


def observe(run: Any, calibration: Calibration) -> Observation:
    """Apply the watch-overhead rule to ``run`` as it stands, with an estimated watch share."""
    stats = signals.histogram_stats(getattr(run, "histograms", None))
    interval = signals.histogram_interval(stats["step"].to_numpy()) if not stats.empty else None
    step_s, _ = signals.mean_step_time(run)
    system = getattr(run, "system", None)
    device = "cuda" if signals.gpu_columns(system) else "cpu"
    if "fastwatch/step" in run.history.columns:
        # incidents.tools.fastwatch logs the same histograms at a fraction of wandb.watch's cost: the
        # calibration does not apply, so only measurements (a baseline, a profile) can blame it.
        share, source = None, None
    else:
        share, source = own_steps_share(run, stats)
        if share is None:
            share, source = _estimate_share(stats, calibration, interval, step_s, device)
    facts = signals.profile_facts({"watch_share": share, "share_is_estimate": True}, source) \
        if share is not None else None
    finding = watch_overhead(Subject(run, stats, None, facts))
    history = run.history
    return Observation(
        run_id=run.run_id, state=run.state, steps=len(history.index),
        last_step=int(history.index.max()) if len(history.index) else None, step_s=step_s,
        histogram_steps=int(stats["step"].nunique()) if not stats.empty else 0, histogram_interval=interval,
        tensors=int(stats["tensor"].nunique()) if not stats.empty else 0,
        gpu_util=signals.gpu_utilisation(system), estimated_share=share, finding=finding)
