"""Numbers the rules share, read from RunEvidence-shaped data (frames, not files).

Kept apart from the rules so each rule reads like its definition: ``histogram_stats`` turns watch
histograms into one row per tensor and step; the others pick GPU utilisation, the loss and step
times out of a run, and the figures that matter out of a profile.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from incidents.diagnosis.attribution import (  # noqa: F401  (the GPU figures rules and reports read)
    gpu_columns,
    run_gpu,
    run_gpu_memory,
    run_gpus,
    steady_rows,
    training_window,
)
from incidents.diagnosis.names import held_out, metric_words
from incidents.evidence.wandb.evidence import histogram_role, logged_tensor

LOSS_NAMES = ("loss", "train/loss", "train_loss", "training_loss", "train/train_loss")


def mapping_at(document: dict[str, Any], key: str) -> dict[str, Any]:
    """``document[key]`` when it is a mapping, else an empty one: profiles come in several shapes."""
    value = document.get(key)
    return value if isinstance(value, dict) else {}


def natural_key(name: str) -> list[Any]:
    """``layers.10.weight`` after ``layers.2.weight``: parameter names sort roughly in depth order."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def module_of(tensor: str) -> str:
    """``encoder.layer.0.output.dense.weight`` → ``encoder.layer.0.output.dense``."""
    return tensor.rsplit(".", 1)[0] if "." in tensor else tensor


def histogram_stats(histograms: pd.DataFrame, logged: bool = False) -> pd.DataFrame:
    """One row per watch histogram: ``kind, tensor, step, absmax, mean_abs, total, signature``.

    With ``logged``, the histograms the user logged by hand instead (``Gradients/…``, ``Weights/…``),
    each as gradients or parameters by its key (``histogram_role``), named by the tensor it is of.

    ``absmax`` comes from the outer bin edges (watch spans each tensor's min to max), so it is exact;
    ``mean_abs`` is estimated from bin centres. ``signature`` lets a rule test two histograms for
    exact equality without holding arrays.
    """
    columns = ["kind", "tensor", "step", "absmax", "mean_abs", "total", "signature"]
    if histograms is None or len(histograms) == 0:
        return pd.DataFrame(columns=columns)
    if logged:
        # Histograms the user logged (kind "other"): their role and tensor from the key.
        roles = [histogram_role(k) if kind == "other" else None
                 for k, kind in zip(histograms["key"], histograms["kind"], strict=True)]
        watch = histograms.assign(kind=np.array(roles, dtype=object), tensor=[logged_tensor(k) for k in histograms["key"]])
        watch = watch[watch["kind"].notna()]
    else:
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


#: Fewer steady-state GPU samples than this give no GPU-utilisation verdict (W&B samples every 15 s
#: by default, so this is about a minute and a quarter of training).
MIN_GPU_SAMPLES = 5


def _steady_gpu(system: pd.DataFrame, trim: float, history: pd.DataFrame | None) -> pd.DataFrame | None:
    """The GPU columns' rows taken while training ran (between the first and last logged step, when
    the history has timestamps), less the first and last ``trim`` of them (start-up and teardown)."""
    rows = steady_rows(system, trim, history)
    return None if rows is None else rows[gpu_columns(system)]


def gpu_utilisation(system: pd.DataFrame, trim: float = 0.05, history: pd.DataFrame | None = None) -> float | None:
    """Mean GPU utilisation (%) over all the node's GPUs in the steady state (first and last ``trim``
    dropped). A run's own figure is :func:`run_gpu`, which reads only the GPUs the run used."""
    frame = _steady_gpu(system, trim, history)
    if frame is None or frame.empty:
        return None
    value = float(np.nanmean(frame.to_numpy(dtype="float64")))
    return None if math.isnan(value) else value


def gpu_samples(system: pd.DataFrame, trim: float = 0.05, history: pd.DataFrame | None = None) -> int:
    """How many steady-state system samples the GPU utilisation figure rests on."""
    frame = _steady_gpu(system, trim, history)
    return 0 if frame is None else int(len(frame))


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
    """The training loss: a well-known name first, then a name ending in ``loss``, then any name
    with a ``loss`` word (``train_loss_epoch``, ``Train_Loss/Task0``), the most logged first; never a
    held-out loss (``val``, ``test``, ``eval``…)."""
    if history is None or history.empty:
        return None
    for name in LOSS_NAMES:
        if name in history.columns:
            return name
    names = [str(c) for c in history.columns if not str(c).startswith("_") and not held_out(str(c))]
    ending = [c for c in names if c.lower().endswith("loss")]
    if ending:       # the most logged; then a "…train_loss" (an objective, not one of its parts); then by name
        return min(ending, key=lambda c: (-int(np.count_nonzero(history[c].notna())), metric_words(c)[-2:-1] != ["train"], c))
    worded = [c for c in names if "loss" in metric_words(c)]
    if not worded:
        return None
    return min(worded, key=lambda c: ("train" not in metric_words(c), -int(np.count_nonzero(history[c].notna())), c))


def median_step_time(run: Any) -> tuple[float | None, str]:
    """Seconds per step, the median (robust to warm-up and pauses): the one step time every
    comparison in a report uses. The reproducer's own median first, else history deltas."""
    return _step_time(run, "median")


def mean_step_time(run: Any) -> tuple[float | None, str]:
    """Seconds per step and where it came from: the reproducer's own figure, else history deltas."""
    return _step_time(run, "mean")


def repro_summary(run: Any) -> dict[str, Any]:
    """The run's summary when its ``repro/*`` figures describe this run alone, else ``{}``.

    A reproducer run with ``--rounds`` wrote into each round's run the figures pooled over every
    round so far (more ``repro/steps_measured`` than the run logged steps): they describe the mode,
    not this run, so a figure cited to this run is taken from its own history instead.
    """
    summary = getattr(run, "summary", {}) or {}
    measured = summary.get("repro/steps_measured")
    history = run.history
    logged = len(history.index) if history is not None else 0
    if isinstance(measured, int | float) and logged and measured > logged:
        return {}
    return summary


def _step_time(run: Any, statistic: Literal["median", "mean"]) -> tuple[float | None, str]:
    summary = repro_summary(run)
    value = summary.get(f"repro/{statistic}_step_s")
    if isinstance(value, int | float) and value > 0:
        return float(value), f"summary repro/{statistic}_step_s"
    history = run.history
    if history is not None and "step_time_s" in history.columns:
        times = pd.to_numeric(history["step_time_s"], errors="coerce").dropna()
        times = times[times > 0]
        if statistic == "median" and len(times):
            return float(times.median()), f"history step_time_s (median of {len(times)})"
        if len(times):  # the mean is said without its count, as reports have always cited it
            return float(times.mean()), "history step_time_s (mean)"
    return None, "no step times"


def training_span(run: Any) -> tuple[float, int, int, str] | None:
    """Seconds between the first and last logged step, those steps, and the source: the whole-run
    time of training itself (start-up, profiler capture and teardown left out)."""
    history = run.history
    if history is None or len(history.index) < 2:
        return None
    clock = "_runtime" if "_runtime" in history else "_timestamp" if "_timestamp" in history else None
    if clock is None:
        return None
    times = pd.to_numeric(history[clock], errors="coerce").dropna()
    if len(times) < 2:
        return None
    first, last = int(times.index[0]), int(times.index[-1])
    span = float(times.iloc[-1] - times.iloc[0])
    return span, first, last, f"history {clock} at steps {first} and {last}"


def movement(values: pd.Series) -> dict[str, float]:
    """Start and end (medians of the first and last stretch), the change, and the scale it is judged by.

    The scale is the larger of the metric's robust range (5th–95th percentile) and its size, so a
    loss near zero or a negative loss is judged by how far it moved, not by a ratio to a tiny value.
    The noise is estimated from step-to-step differences (robust to a trend).
    """
    arr = values.to_numpy(dtype="float64")
    head, tail = max(3, len(arr) // 20), max(5, len(arr) // 5)
    start, end = float(np.median(arr[:head])), float(np.median(arr[-tail:]))
    spread = float(np.percentile(arr, 95) - np.percentile(arr, 5))
    diffs = np.diff(arr)
    noise = float(1.4826 * np.median(np.abs(diffs - np.median(diffs))) / np.sqrt(2)) if diffs.size else 0.0
    stderr = 1.2533 * noise * float(np.sqrt(1 / head + 1 / tail))
    return {"start": start, "end": end, "change": end - start, "spread": spread, "noise": noise,
            "stderr": stderr, "scale": max(spread, abs(start)), "head": head, "tail": tail}


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
    #: Share of the profiled steps spent waiting on input (DataLoader ranges, host-to-device copies).
    input_share: float | None = None
    #: True when ``watch_share`` is an estimate (scaled, predicted or capped), not a measurement.
    share_is_estimate: bool = False


def profile_facts(profile: dict[str, Any] | None, source: str = "profile",
                  log: str | None = None, log_freq: int | None = None) -> ProfileFacts | None:
    """Read our profile.json (modes) or an ``inspect_profile`` result (watch_share) into one shape.

    With a profile.json, the watch mode matching the run's ``log``/``log_freq`` is preferred, then the
    slowest ``watch:`` mode; the fastwatch mode with the most frequent logging is offered as the fix.
    """
    if not isinstance(profile, dict):
        return None
    modes = [m for m in profile.get("modes") or [] if isinstance(m, dict)]
    model = mapping_at(profile, "model")
    if not modes:
        share, loading = profile.get("watch_share"), profile.get("input_share")
        return ProfileFacts(source, float(share) if isinstance(share, int | float) else None,
                            None, None, None, None, None, None, None,
                            float(loading) if isinstance(loading, int | float) else None,
                            profile.get("share_is_estimate") is True)
    watch = [m for m in modes if m.get("kind") == "watch" and m.get("mean_step_s")]
    match = [m for m in watch if m.get("log") == log and m.get("log_freq") == log_freq]
    heaviest = match[0] if match else max(watch, key=lambda m: m.get("mean_step_s") or 0, default=None)
    baseline = next((m for m in modes if m.get("kind") == "baseline" and m.get("mean_step_s")), None)
    fast = sorted((m for m in modes if m.get("kind") == "fastwatch" and m.get("mean_step_s")),
                  key=lambda m: (m.get("log") != "all", m.get("log_freq") or 0))
    light = sorted((m for m in watch if m is not heaviest and m.get("mean_step_s")),
                   key=lambda m: m.get("mean_step_s") or 0)
    share = heaviest.get("hook_share") if heaviest else None
    return ProfileFacts(source, float(share) if isinstance(share, int | float) else None, heaviest, baseline,
                        fast[0] if fast else None, light[0] if light else None,
                        model.get("parameter_tensors"), model.get("parameters"), model.get("name"))


#: Config keys giving the planned length of a run, in steps (epochs are read against an ``epoch`` metric).
PLANNED_STEP_KEYS = ("max_steps", "total_steps", "num_steps", "n_steps", "train_steps", "num_iterations",
                     "iterations", "max_iters", "n_iter", "steps")
PLANNED_EPOCH_KEYS = ("epochs", "num_epochs", "n_epochs", "max_epochs", "num_train_epochs")
ENDED_EARLY = {"interrupted": "was interrupted (Ctrl-C)", "crashed": "crashed", "killed": "was killed",
               "exited": "exited early", "unfinished": "never closed (killed, or still running)"}


def _config_int(config: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, int] | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return key, int(value)
    return None


def planned_share(run: Any) -> str | None:
    """"at step 349 of 4,385 planned (8 %, config steps)": how far a run got, when its config says."""
    history = run.history
    if history is None or history.empty:
        return None
    config = getattr(run, "config", {}) or {}
    last = int(history.index.max())
    steps = _config_int(config, PLANNED_STEP_KEYS)
    if steps is not None and steps[1] > last + 1:
        return f"at step {last:,} of {steps[1]:,} planned ({(last + 1) / steps[1]:.0%}, config {steps[0]})"
    epochs = _config_int(config, PLANNED_EPOCH_KEYS)
    column = next((c for c in ("epoch", "train/epoch", "epochs") if c in history.columns), None)
    if epochs is not None and column is not None:
        done = pd.to_numeric(history[column], errors="coerce").dropna()
        # A whole-number counter names the epoch under way (0 or 1 for the first); a fraction
        # (the Trainer's train/epoch) is the progress made.
        ran = (float(done.max()) + (1 if (done % 1 == 0).all() else 0)) if len(done) else 0.0
        if len(done) and ran < epochs[1]:
            return f"in epoch {float(done.max()):.3g} of {epochs[1]:,} planned ({ran / epochs[1]:.0%}, config {epochs[0]})"
    return f"at step {last:,}"


def ending_text(run: Any) -> str | None:
    """"was interrupted (Ctrl-C) at step 349 of 4,385 planned (8 %…)": a run that ended early, or None."""
    ending = getattr(run, "ending", None) or {}
    how = ending.get("how")
    if how not in ENDED_EARLY:
        where = planned_share(run)
        return f"has a history cut short {where}" if ending.get("history_cut") and where else None
    where = planned_share(run)
    return ENDED_EARLY[how] + (f" {where}" if where else "") + \
        (f"; {ending['detail']}" if how in ("crashed", "killed") and ending.get("detail") else "")
