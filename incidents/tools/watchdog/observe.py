"""What a (possibly unfinished) run shows so far, and the watch-overhead rule applied to it.

A live run has no baseline and no profile yet, so the share of step time spent in watch work is
estimated, and called an estimate (``share_is_estimate``). When watch logs every few steps the run
itself tells: its steps that logged histograms against those that did not (the difference is the
histogram work, the steps without it are the step time without watch). When it logs every step,
the histograms logged so far give the elements and tensors per logging step, the watch calibration
(``hourtab repro --calibrate``, or the shipped default) their cost, and the run's own steps the step;
a prediction above ``MAX_SHARE`` of the step is capped and said to be. The estimate is handed to the
diagnosis's own ``watch_overhead`` rule, so the verdict reads exactly as in the incident report.

The estimate compares like with like. A CPU calibration is the hooks' CPU time (one torch thread's
clock), while a step's wall time grows with the machine's load, so it is set against the step's CPU
time: the mean step × the share of a core the training process used (W&B's ``system.cpu``). Until
the run has recorded one, it is set against the wall step and said to be a lower bound. A GPU run is
estimated from a GPU calibration only: the CPU figures do not apply to it, and the evidence says so.
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


def process_cores(run: Any) -> tuple[float | None, int]:
    """Cores the training process used while it trained, and the number of samples that says so.

    W&B's ``system.cpu`` is the process's CPU percent ÷ the machine's logical CPU count (psutil), sampled
    every 15 s by default; samples taken between the first and the last logged step count.
    """
    system, history = run.system, run.history
    env = getattr(run, "environment", None) or {}
    count = env.get("cpu_count_logical") or env.get("cpu_count")
    if system is None or "system.cpu" not in system.columns or not isinstance(count, int) or count < 1:
        return None, 0
    values = pd.to_numeric(system["system.cpu"], errors="coerce")
    if history is not None and "_timestamp" in history and history["_timestamp"].notna().sum() >= 2:
        stamps = history["_timestamp"].dropna()
        values = values[(values.index > float(stamps.iloc[0])) & (values.index <= float(stamps.iloc[-1]))]
    values = values.dropna()
    values = values[values > 0]
    if values.empty:
        return None, 0
    return float(values.mean()) * count / 100, len(values)


def _step_basis(run: Any, step_s: float, clocks: set[Any]) -> tuple[float, str]:
    """What the predicted hook time is divided by, and the words for it: CPU time for a CPU-time
    calibration (the step's wall time also counts waiting for a busy CPU), else the wall step."""
    if clocks != {"thread CPU time"}:
        return step_s, f"mean step time {step_s:.3g} s"
    cores, samples = process_cores(run)
    if cores is None:
        return step_s, (f"mean step time {step_s:.3g} s, wall clock: the run has recorded no CPU share of its "
                        "process yet (W&B system.cpu), so on a busy machine, where a step takes longer than its "
                        "CPU time, the share is a lower bound")
    source = f"W&B system.cpu × cpu_count, {samples} sample{'s' if samples != 1 else ''} while it trained"
    if cores >= 1:
        return step_s, (f"mean step time {step_s:.3g} s (the training process used {cores:.2f} cores, {source}: "
                        "its steps did not wait for a CPU, so wall and CPU time are taken as equal)")
    return step_s * cores, (f"CPU time per step {step_s * cores:.3g} s (mean step {step_s:.3g} s × the {cores:.2f} "
                            f"of a core the training process used, {source}; assumes its steps are CPU-bound)")


def _estimate_share(run: Any, stats: Any, calibration: Calibration, interval: int | None, step_s: float | None,
                    device: str) -> tuple[float | None, str | None]:
    """Predicted watch seconds per step ÷ the step's seconds on the same clock (``_step_basis``).

    Capped at 0.9: a calibration measured on a busier or slower machine can predict more than the
    whole step, and the rule should then read "most of the step", not "all of it".
    """
    if stats.empty or not interval or not step_s:
        return None, None
    seconds, clocks = 0.0, set()
    for kind in ("gradients", "parameters"):
        rows = stats[stats["kind"] == kind]
        if rows.empty:
            continue
        first = rows.sort_values("step").groupby("tensor", sort=False)["total"].max()
        seconds += predict(calibration, kind, interval, int(first.sum()), len(first), device, 1).per_step_s
        clocks.add(calibration.path(device, kind).get("clock"))
    step, basis = _step_basis(run, step_s, clocks)
    share = min(seconds / step, MAX_SHARE)
    capped = seconds / step > MAX_SHARE
    clock = "CPU time" if clocks == {"thread CPU time"} else "time"
    return share, (f"estimate: {seconds:.3g} s of histograms per step, {clock} (the logged histograms' size × the "
                   f"watch calibration on {device}: {calibration.origin}) ÷ {basis}"
                   + (f"; the calibration predicts {seconds / step:.0%} of the step, more than it can be, so "
                      f"the share is capped at {MAX_SHARE:.0%} (a lower bound)" if capped else ""))


def unavailable(calibration: Calibration, device: str) -> str | None:
    """Why the calibration cannot estimate a run on ``device`` (None when it can)."""
    if calibration.has(device):
        return None
    other = "the CPU figures do not apply to a GPU run" if device != "cpu" else "a GPU's figures do not apply to a CPU run"
    return (f"not estimated from the calibration: this run trains on {device} and the calibration has no {device} "
            f"figures ({other}); run `hourtab repro --calibrate` on the {device} machine")


def own_steps_share(run: Any, stats: Any) -> tuple[float | None, str | None]:
    """Watch share from the run's own steps: (mean step − median step without histograms) ÷ mean step.

    Histograms land on the step whose backward pass computed them, so a step that logged some took
    their cost and one that did not is the step without watch. Needs ``MIN_OWN_STEPS`` of each.
    """
    history = run.history
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
    stats = signals.histogram_stats(run.histograms)
    interval = signals.histogram_interval(stats["step"].to_numpy()) if not stats.empty else None
    step_s, _ = signals.mean_step_time(run)
    system = run.system
    device = "cuda" if signals.gpu_columns(system) else "cpu"
    if "fastwatch/step" in run.history.columns:
        # incidents.tools.fastwatch logs the same histograms at a fraction of wandb.watch's cost: the
        # calibration does not apply, so only measurements (a baseline, a profile) can blame it.
        share, source, missing = None, None, None
    else:
        share, source = own_steps_share(run, stats)
        missing = unavailable(calibration, device) if share is None and not stats.empty else None
        if share is None and missing is None:
            share, source = _estimate_share(run, stats, calibration, interval, step_s, device)
    facts = signals.profile_facts({"watch_share": share, "share_is_estimate": True}, source) \
        if share is not None and source is not None else None
    finding = watch_overhead(Subject(run, stats, None, facts))
    if missing:
        finding.evidence["watch_share_unavailable"] = missing
    history = run.history
    return Observation(
        run_id=run.run_id, state=run.state, steps=len(history.index),
        last_step=int(history.index.max()) if len(history.index) else None, step_s=step_s,
        histogram_steps=int(stats["step"].nunique()) if not stats.empty else 0, histogram_interval=interval,
        tensors=int(stats["tensor"].nunique()) if not stats.empty else 0,
        gpu_util=signals.gpu_utilisation(system), estimated_share=share, finding=finding)
