"""Numbers the rules share, read from RunEvidence-shaped data (frames, not files).

Kept apart from the rules so each rule reads like its definition: ``histogram_stats`` turns watch
histograms into one row per tensor and step; the others pick GPU utilisation, the loss and step
times out of a run, and the figures that matter out of a profile.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

LOSS_NAMES = ("loss", "train/loss", "train_loss", "training_loss", "train/train_loss")


def natural_key(name: str) -> list[Any]:
    """``layers.10.weight`` after ``layers.2.weight``: parameter names sort roughly in depth order."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def module_of(tensor: str) -> str:
    """``encoder.layer.0.output.dense.weight`` → ``encoder.layer.0.output.dense``."""
    return tensor.rsplit(".", 1)[0] if "." in tensor else tensor


def histogram_stats(histograms: pd.DataFrame) -> pd.DataFrame:
    """One row per watch histogram: ``kind, tensor, step, absmax, mean_abs, total, signature``.

    ``absmax`` comes from the outer bin edges (watch spans each tensor's min to max), so it is exact;
    ``mean_abs`` is estimated from bin centres. ``signature`` lets a rule test two histograms for
    exact equality without holding arrays.
    """
    columns = ["kind", "tensor", "step", "absmax", "mean_abs", "total", "signature"]
    if histograms is None or len(histograms) == 0:
        return pd.DataFrame(columns=columns)
    watch = histograms[histograms["kind"].isin(["gradients", "parameters"])]
    rows = []
    for kind, tensor, step, bins, counts in zip(watch["kind"], watch["tensor"], watch["step"],
                                                watch["bins"], watch["counts"], strict=True):
        edges = np.asarray(bins, dtype="float64")
        values = np.asarray(counts, dtype="float64")
        if edges.size < 2 or values.size == 0:
            continue
        total = float(values.sum())
        centres = edges[:1] if edges.size == 2 and values.size == 1 and edges[0] == edges[1] \
            else (edges[:-1] + edges[1:]) / 2
        centres = centres[: values.size]
        mean_abs = float((np.abs(centres) * values[: centres.size]).sum() / total) if total else 0.0
        rows.append((kind, tensor, int(step), float(max(abs(edges[0]), abs(edges[-1]))), mean_abs, total,
                     hash((edges.tobytes(), values.tobytes()))))
    return pd.DataFrame(rows, columns=columns)


def histogram_interval(steps: list[int] | np.ndarray) -> int | None:
    """Median step gap between logged histograms; None with fewer than two logging steps."""
    unique = np.unique(np.asarray(steps, dtype="int64"))
    if unique.size < 2:
        return None
    return int(np.median(np.diff(unique)))


def gpu_columns(system: pd.DataFrame) -> list[str]:
    if system is None:
        return []
    return sorted(c for c in system.columns if re.fullmatch(r"system\.gpu\.\d+\.gpu", str(c)))


def gpu_utilisation(system: pd.DataFrame, trim: float = 0.05) -> float | None:
    """Mean GPU utilisation (%) over all GPUs in the steady state (first and last ``trim`` dropped)."""
    cols = gpu_columns(system)
    if not cols:
        return None
    frame = system[cols].dropna(how="all")
    if frame.empty:
        return None
    n = len(frame)
    cut = int(n * trim)
    if n - 2 * cut >= 3:
        frame = frame.iloc[cut: n - cut]
    value = float(np.nanmean(frame.to_numpy(dtype="float64")))
    return None if math.isnan(value) else value


def gpu_memory_percent(system: pd.DataFrame) -> float | None:
    """Mean GPU memory allocated (% of the device), over all GPUs; None when not recorded."""
    if system is None:
        return None
    cols = sorted(c for c in system.columns if re.fullmatch(r"system\.gpu\.\d+\.memoryAllocated", str(c)))
    if not cols:
        return None
    values = system[cols].to_numpy(dtype="float64")
    if not np.isfinite(values).any():
        return None
    return float(np.nanmean(values))


def loss_column(history: pd.DataFrame) -> str | None:
    """The training loss: a well-known name first, then any column whose name ends in ``loss``."""
    if history is None or history.empty:
        return None
    for name in LOSS_NAMES:
        if name in history.columns:
            return name
    candidates = sorted(c for c in history.columns if str(c).lower().endswith("loss")
                        and not str(c).startswith("_") and "val" not in str(c).lower())
    return candidates[0] if candidates else None


def mean_step_time(run: Any) -> tuple[float | None, str]:
    """Seconds per step and where it came from: the reproducer's own figure, else history deltas."""
    summary = getattr(run, "summary", {}) or {}
    value = summary.get("repro/mean_step_s")
    if isinstance(value, int | float) and value > 0:
        return float(value), "summary repro/mean_step_s"
    history = getattr(run, "history", None)
    if history is not None and "step_time_s" in history.columns:
        times = pd.to_numeric(history["step_time_s"], errors="coerce").dropna()
        times = times[times > 0]
        if len(times):
            return float(times.mean()), "history step_time_s (mean)"
    return None, "no step times"


def parameter_count(stats: pd.DataFrame) -> int | None:
    """Elements per tensor from histogram counts at each tensor's first step, summed (= numel)."""
    if stats.empty:
        return None
    preferred = stats[stats["kind"] == "parameters"]
    frame = preferred if not preferred.empty else stats[stats["kind"] == "gradients"]
    first = frame.sort_values("step").groupby("tensor", sort=False)["total"].max()
    return int(first.sum()) if len(first) else None


@dataclass(frozen=True)
class ProfileFacts:
    """What a diagnosis needs from a profile, whichever shape it came in."""

    source: str
    watch_share: float | None
    watch_mode: dict[str, Any] | None
    baseline_mode: dict[str, Any] | None
    fastwatch_mode: dict[str, Any] | None
    light_watch_mode: dict[str, Any] | None
    parameter_tensors: int | None
    parameters: int | None
    model_name: str | None


def profile_facts(profile: dict[str, Any] | None, source: str = "profile",
                  log: str | None = None, log_freq: int | None = None) -> ProfileFacts | None:
    """Read our profile.json (modes) or an ``inspect_profile`` result (watch_share) into one shape.

    With a profile.json, the watch mode matching the run's ``log``/``log_freq`` is preferred, then the
    slowest ``watch:`` mode; the fastwatch mode with the most frequent logging is offered as the fix.
    """
    if not isinstance(profile, dict):
        return None
    modes = [m for m in profile.get("modes") or [] if isinstance(m, dict)]
    model = profile.get("model") if isinstance(profile.get("model"), dict) else {}
    if not modes:
        share = profile.get("watch_share")
        return ProfileFacts(source, float(share) if isinstance(share, int | float) else None,
                            None, None, None, None, None, None, None)
    watch = [m for m in modes if m.get("kind") == "watch" and m.get("mean_step_s")]
    match = [m for m in watch if m.get("log") == log and m.get("log_freq") == log_freq]
    heaviest = match[0] if match else max(watch, key=lambda m: m.get("mean_step_s") or 0, default=None)
    baseline = next((m for m in modes if m.get("kind") == "baseline" and m.get("mean_step_s")), None)
    fast = sorted((m for m in modes if m.get("kind") == "fastwatch" and m.get("mean_step_s")),
                  key=lambda m: (m.get("log") != "all", m.get("log_freq") or 0))
    light = sorted((m for m in watch if m is not heaviest and m.get("mean_step_s")),
                   key=lambda m: m.get("mean_step_s"))
    share = heaviest.get("hook_share") if heaviest else None
    return ProfileFacts(source, float(share) if isinstance(share, int | float) else None, heaviest, baseline,
                        fast[0] if fast else None, light[0] if light else None,
                        model.get("parameter_tensors"), model.get("parameters"), model.get("name"))
