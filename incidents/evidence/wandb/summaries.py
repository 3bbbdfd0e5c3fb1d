"""Figures computed from every point of a run (never from downsampled chart series).

GPU utilisation is judged over the steady state: the first and last 5 % of the runtime (start-up,
data loading, final evaluation and saving) are left out by default, because they would drag a
healthy run's mean down and hide nothing interesting about the training loop itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from incidents.evidence.wandb.evidence import RunEvidence

DEFAULT_EDGE_FRACTION = 0.05
LOW_UTILISATION = 50.0
_GPU_UTIL = re.compile(r"^system\.gpu\.(\d+)\.gpu$")


@dataclass(frozen=True)
class GpuUtilisation:
    mean: float
    median: float
    p10: float
    share_below_50: float      # fraction of steady-state samples under 50 %
    samples: int


@dataclass(frozen=True)
class RunSummary:
    steps: int
    runtime_s: float | None
    steps_per_s: float | None               # over the steady state, from history timing
    median_step_time_s: float | None
    gpus: dict[str, GpuUtilisation] = field(default_factory=dict)


def steady_window(times: np.ndarray, edge_fraction: float = DEFAULT_EDGE_FRACTION) -> np.ndarray:
    """Boolean mask of samples inside the steady state of ``times`` (seconds)."""
    if len(times) == 0:
        return np.zeros(0, dtype=bool)
    lo, hi = np.nanmin(times), np.nanmax(times)
    span = hi - lo
    return (times >= lo + edge_fraction * span) & (times <= hi - edge_fraction * span)


def per_gpu_utilisation(system: pd.DataFrame, edge_fraction: float = DEFAULT_EDGE_FRACTION) -> dict[str, GpuUtilisation]:
    """Per GPU index: mean/median/p10 utilisation and the share of time under 50 %."""
    out: dict[str, GpuUtilisation] = {}
    if system.empty:
        return out
    times = system.index.to_numpy(dtype=np.float64)
    mask = steady_window(times, edge_fraction)
    for column in system.columns:
        match = _GPU_UTIL.match(str(column))
        if not match:
            continue
        values = system[column].to_numpy(dtype=np.float64)[mask]
        values = values[~np.isnan(values)]
        if len(values) == 0:
            values = system[column].dropna().to_numpy(dtype=np.float64)
        if len(values) == 0:
            continue
        out[match.group(1)] = GpuUtilisation(
            mean=float(values.mean()), median=float(np.median(values)),
            p10=float(np.percentile(values, 10)),
            share_below_50=float((values < LOW_UTILISATION).mean()), samples=int(len(values)))
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def summarise_run(evidence: RunEvidence, edge_fraction: float = DEFAULT_EDGE_FRACTION) -> RunSummary:
    history = evidence.history
    median_step = steps_per_s = None
    if "step_time_s" in history and history["step_time_s"].notna().any():
        clock = history["_runtime"] if "_runtime" in history else history.get("_timestamp")
        step_times = history["step_time_s"].to_numpy(dtype=np.float64)
        if clock is not None:
            step_times = step_times[steady_window(clock.to_numpy(dtype=np.float64), edge_fraction)]
        step_times = step_times[~np.isnan(step_times)]
        if len(step_times):
            median_step = float(np.median(step_times))
            mean_step = float(step_times.mean())
            steps_per_s = 1.0 / mean_step if mean_step > 0 else None
    return RunSummary(steps=evidence.steps, runtime_s=evidence.runtime_s, steps_per_s=steps_per_s,
                      median_step_time_s=median_step, gpus=per_gpu_utilisation(evidence.system, edge_fraction))


def inspect_dict(evidence: RunEvidence) -> dict:
    """The public JSON of ``hourtab wandb inspect --json`` (its shape is an interface: keep it)."""
    gpus = per_gpu_utilisation(evidence.system)
    histos = evidence.histograms
    steps = sorted({int(s) for s in histos["step"]}) if len(histos) else []
    return {
        "kind": evidence.kind,
        "run_id": evidence.run_id,
        "name": evidence.name,
        "project": evidence.project,
        "steps": evidence.steps,
        "runtime_s": evidence.runtime_s,
        "metrics": evidence.metrics,
        "system_metrics": evidence.system_metrics,
        "gpu_utilization": {i: {"mean": g.mean, "median": g.median, "p10": g.p10} for i, g in gpus.items()},
        "environment": evidence.environment,
        "histograms": {"gradients": int(evidence.histogram_counts.get("gradients", 0)),
                       "parameters": int(evidence.histogram_counts.get("parameters", 0)),
                       "steps": steps},
        # Histograms the user logged under their own names (not wandb.watch), by what they hold.
        "logged_histograms": {"gradients": int(evidence.histogram_counts.get("logged_gradients", 0)),
                              "weights": int(evidence.histogram_counts.get("logged_parameters", 0))},
        "media": dict(evidence.media),
        "ending": dict(evidence.ending),
        "warnings": list(evidence.warnings),
    }
