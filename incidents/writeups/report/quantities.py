"""Every figure a report shows about a run or a profile mode, computed here and nowhere else.

The KPI strip, the verification table, the charts, the profile table and the log entry read these
values; none computes its own. Figures that measure different things have different names, so a
reader never meets one name with two values:

- a run's *median step time* (the one every comparison uses, from ``signals.median_step_time``);
  a profile mode's *median step over its rounds* is another figure, labelled so;
- a run's *training span* (first to last logged step) is not its *wall time* (``_runtime``: start-up,
  profiler capture and teardown included);
- watch-hook cost is given as *wall-clock* time (what training waited) and as *CPU time* on the
  training thread (what the hooks computed; on a loaded machine wall time is several times more);
  the verdict's share of step time is the wall-clock one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from incidents.diagnosis import quality, signals
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.writeups.report import figures as fmt
from incidents.writeups.report.figures import Figure, missing


def _run_figure(run: Any, read: Callable[[Any], tuple[Any, str]], absent: str,
                show: Callable[[float], str]) -> Figure:
    """One run's figure: ``read`` gives (value, source); a ``None`` value is stated as ``absent``."""
    if run is None:
        return missing("no run")
    value, source = read(run)
    if value is None:
        return missing(absent)
    return Figure(show(value), f"run {fmt.run_label(run)} · {source}", float(value))


def step(run: Any) -> Figure:
    """The run's median step time."""
    return _run_figure(run, signals.median_step_time, "no step times", fmt.step_time)


def _span(run: Any) -> tuple[float | None, str]:
    span = signals.training_span(run)
    return (span[0], f"training span: {span[3]}") if span is not None else (None, "")


def span(run: Any) -> Figure:
    """First to last logged step: the time training itself took."""
    return _run_figure(run, _span, "training span not recorded (fewer than two timed steps)", fmt.duration)


def wall_time(run: Any) -> Figure:
    """The whole run as W&B timed it (``_runtime``), start-up and teardown included."""
    return _run_figure(run, lambda r: (getattr(r, "runtime_s", None), "_runtime (whole run)"),
                       "wall time not recorded", fmt.duration)


def has_gpu_metrics(run: Any) -> bool:
    return bool(signals.gpu_columns(run.system))


def gpu(run: Any) -> Figure:
    """Steady-state GPU utilisation, or why it is not stated."""
    if run is None:
        return missing("no run")
    util, samples = signals.run_gpu(run)
    if not has_gpu_metrics(run):
        return missing("not recorded (no GPU metrics)")
    if util is None or samples < signals.MIN_GPU_SAMPLES:
        return missing(f"not stated: {samples} steady-state GPU samples (fewer than {signals.MIN_GPU_SAMPLES})")
    return Figure(fmt.percent(util), f"run {fmt.run_label(run)} · system.gpu.*.gpu, steady-state mean of "
                                     f"{samples} samples", util)


def ratio(numerator: Figure, denominator: Figure) -> Figure | None:
    """``numerator ÷ denominator`` with both sources, or ``None`` when either is missing."""
    if numerator.value is None or not denominator.value:
        return None
    value = numerator.value / denominator.value
    return Figure(f"{value:.2f}×", f"{numerator.source} ÷ {denominator.source}", value)


@dataclass(frozen=True)
class FinalValues:
    """Both runs' last value of one metric, and whether it is held out or a training-loss point."""

    metric: str
    held_out: bool
    before: Figure
    after: Figure

    @property
    def kind(self) -> str:
        return "held-out metric" if self.held_out else "training-loss point, not a held-out metric"

    @property
    def same(self) -> bool | None:
        before, after = self.before.value, self.after.value
        if before is None or after is None:
            return None
        scale = max(abs(before), abs(after), 1e-12)
        return abs(before - after) <= 0.01 * scale


def _metric(run: RunEvidence | None, prefer: str | None = None) -> str | None:
    """The outcome metric: ``prefer`` when the run has it, else a held-out one, else accuracy, else the loss."""
    if run is None or run.history.empty:
        return None
    history = run.history
    if prefer and prefer in history.columns:
        return prefer
    for column, _ in quality.held_out_metrics(history):
        if pd.to_numeric(history[column], errors="coerce").notna().any():
            return column
    for name in ("accuracy", "eval/accuracy", "val/accuracy", "acc", "eval_accuracy"):
        if name in history.columns:
            return name
    return signals.loss_column(history)


def last_value(run: Any, column: str | None) -> Figure:
    if run is None:
        return missing("no run attached")
    history = run.history
    if column is None or history is None or column not in history.columns:
        return missing("no loss or accuracy metric" if column is None else f"{column}: not logged")
    values = pd.to_numeric(history[column], errors="coerce").dropna()
    if values.empty:
        return missing(f"{column}: no values")
    value, at = float(values.iloc[-1]), int(values.index[-1])
    return Figure(f"{value:.4g} at step {at:,}", f"run {fmt.run_label(run)} · history {column} at step {at}", value)


def outcome(before: Any, after: Any) -> FinalValues | None:
    """Both runs on the same metric: the incident's choice (a held-out one first)."""
    column = _metric(before) if before is not None else _metric(after)
    if column is None:
        return None
    return FinalValues(column, quality.held_out(column), last_value(before, column), last_value(after, column))


_LOG_FREQ = re.compile(r"log_freq\s*=\s*(\d+)")


def _steps_logged(run: Any) -> int:
    history = run.history
    return int(history.index.max()) + 1 if history is not None and len(history.index) else 0


def logging_reached(run: Any, profile: Any = None, fix_after: str = "") -> Figure | None:
    """Whether a run under the fix's watch reached a histogram-logging step (``None``: nothing says).

    A run that never did measured the hooks' bookkeeping only, not the histograms the fix still logs:
    its step time is not the fix's cost. Read from the profile mode that made this run, else from
    the fix's ``log_freq`` against the steps the run logged.
    """
    if run is None:
        return None
    label = fmt.run_label(run)
    for mode in (profile.document.get("modes") or []) if profile is not None else []:
        if isinstance(mode, dict) and (mode.get("wandb_run") or {}).get("id") == run.run_id \
                and mode.get("logged") is not None and mode.get("log_freq"):
            source = f"{profile.name} · mode {mode.get('mode')} logged (run {label})"
            if mode["logged"]:
                return Figure("reached a logging step", source, 1.0)
            steps = _steps_logged(run)
            return Figure("never reached a logging step (" + (f"{steps:,} steps logged, " if steps else "")
                          + f"log_freq={mode['log_freq']})", source, 0.0)
    if len(run.histograms):
        return Figure("reached a logging step", f"run {label} · watch histograms", 1.0)
    match = _LOG_FREQ.search(fix_after or "")
    steps = _steps_logged(run)
    if match and steps:
        freq = int(match.group(1))
        if steps < freq:
            return Figure(f"never reached a logging step ({steps:,} steps logged, log_freq={freq})",
                          f"run {label} · history steps; the fix's log_freq", 0.0)
    return None


@dataclass(frozen=True)
class RunFigures:
    """One attached run's figures, computed once per report."""

    role: str
    run: Any
    step: Figure
    span: Figure
    wall: Figure
    gpu: Figure
    logging: Figure | None = None

    @classmethod
    def of(cls, role: str, run: Any, profile: Any = None, fix_after: str = "") -> RunFigures:
        return cls(role, run, step(run), span(run), wall_time(run), gpu(run),
                   logging_reached(run, profile, fix_after) if role == "fixed" else None)


@dataclass(frozen=True)
class ModeFigures:
    """A profile mode's figures: means over all its rounds, as the reproducer states them (its console,
    profile.md and the projected run use the mean step), so named apart from any run's median step."""

    mode: str
    mean: Figure
    ratio: Figure | None
    hook_wall: Figure
    hook_cpu: Figure
    share: Figure
    histograms: int | None
    note: str = ""


def _ms(value: Any, source: str, per_step: bool = False) -> Figure:
    if not isinstance(value, int | float):
        return missing("not recorded")
    seconds = value / 1000.0 if per_step else float(value)
    return Figure(fmt.step_time(seconds), source, seconds)


def rounds_text(document: dict[str, Any]) -> str:
    """"2 rounds of 6 measured steps": what a mode's figures pool."""
    settings = document.get("settings") or {}
    rounds = int(settings.get("rounds") or 1)
    steps = settings.get("steps")
    per = f" of {steps} measured steps" if steps else ""
    return f"{rounds} round{'s' if rounds != 1 else ''}{per}"


def profile_modes(name: str, document: dict[str, Any]) -> list[ModeFigures]:
    """Each mode's mean step over its rounds and its ratio to the baseline mode's mean (the profile's
    ``ratio_to_baseline``), and its hook time per step as wall-clock and as CPU time."""
    modes = [m for m in (document.get("modes") or []) if isinstance(m, dict)]
    pooled = rounds_text(document)
    base_mode = next((m for m in modes if m.get("kind") == "baseline"), None)
    base = _ms(base_mode.get("mean_step_s"), f"{name} · mode {base_mode.get('mode')} ({pooled}) mean_step_s") \
        if base_mode else None
    out: list[ModeFigures] = []
    for mode in modes:
        label = str(mode.get("mode"))
        source = f"{name} · mode {label} ({pooled})"
        mean = _ms(mode.get("mean_step_s"), f"{source} mean_step_s")
        share = mode.get("hook_share")
        out.append(ModeFigures(
            label, mean, ratio(mean, base) if base is not None else None,
            _ms(mode.get("mean_hook_ms"), f"{source} mean_hook_ms (wall clock)", per_step=True),
            _ms(mode.get("mean_hook_cpu_ms"), f"{source} mean_hook_cpu_ms (training thread)", per_step=True)
            if mode.get("kind") != "baseline" else missing("—"),
            Figure(fmt.percent(share * 100), f"{source} hook_share (wall clock)", share)
            if isinstance(share, int | float) else missing("not recorded"),
            mode.get("histograms_logged"), str(mode.get("note") or "")))
    return out
