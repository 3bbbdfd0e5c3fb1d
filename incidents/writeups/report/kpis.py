"""The KPI strip and the verification table, computed from the attached runs, profile and entries.

"Before" is the incident run; "after" is the fixed run, else the baseline run, else the profile's
baseline mode — the label always says which, and every figure names its source. A missing part is
stated ("no fixed or baseline run attached"), never left blank or guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import setup, signals
from incidents.writeups.report import figures as fmt
from incidents.writeups.report.figures import Figure, missing
from incidents.writeups.report.inputs import ReportInput


@dataclass(frozen=True)
class Kpi:
    label: str
    before: Figure
    after: Figure | None = None
    note: str = ""


@dataclass(frozen=True)
class VerificationRow:
    label: str
    before: Figure
    after: Figure


@dataclass(frozen=True)
class Comparison:
    """Who plays "before" and "after", and the facts the KPIs and the log entry share."""

    before: Any | None
    after: Any | None
    after_role: str | None
    before_step: Figure
    after_step: Figure
    slowdown: Figure
    profile_name: str | None
    #: Every recorded fact the two runs disagree on (model, batch, hardware…), shown beside the slowdown.
    differences: tuple[Any, ...] = ()

    @property
    def comparable(self) -> bool:
        return not any(d.blocking for d in self.differences)


def _run_figure(run: Any, read: Callable[[Any], tuple[Any, str]], absent: str,
                show: Callable[[float], str]) -> Figure:
    """One run's figure: ``read`` gives (value, source); a ``None`` value is stated as ``absent``."""
    if run is None:
        return missing("no run")
    value, source = read(run)
    if value is None:
        return missing(absent)
    return Figure(show(value), f"run {fmt.run_label(run)} · {source}", float(value))


def _gpu(run: Any) -> Figure:
    return _run_figure(run, lambda r: (signals.gpu_utilisation(getattr(r, "system", None)),
                                       "system.gpu.*.gpu, steady-state mean"),
                       "not recorded (no GPU metrics)", fmt.percent)


def _step(run: Any) -> Figure:
    return _run_figure(run, signals.mean_step_time, "no step times", fmt.step_time)


def _runtime(run: Any) -> Figure:
    return _run_figure(run, lambda r: (getattr(r, "runtime_s", None), "runtime (_runtime)"),
                       "runtime not recorded", fmt.duration)


def final_metric(run: Any) -> Figure:
    if run is None:
        return missing("no run")
    history = getattr(run, "history", None)
    if history is None or history.empty:
        return missing("no history")
    for name in ("accuracy", "eval/accuracy", "val/accuracy", "acc", "eval_accuracy"):
        if name in history.columns:
            return _last(run, history, name)
    column = signals.loss_column(history)
    return _last(run, history, column) if column else missing("no loss or accuracy metric")


def _last(run: Any, history: pd.DataFrame, column: str) -> Figure:
    values = pd.to_numeric(history[column], errors="coerce").dropna()
    if values.empty:
        return missing(f"{column}: no values")
    value = float(values.iloc[-1])
    return Figure(f"{column} {value:.4g}", f"run {fmt.run_label(run)} · history {column} at step "
                  f"{int(values.index[-1])}", value)


def compare(inputs: ReportInput) -> Comparison:
    before = inputs.run("incident")
    after, role = inputs.run("fixed"), "fixed"
    if after is None:
        after, role = inputs.run("baseline"), "baseline"
    if after is None:
        role = None
    before_step, after_step = _step(before), _step(after)
    profile = inputs.profile
    if after_step.missing and profile and profile.document.get("modes"):
        base = next((m for m in profile.document["modes"] if m.get("kind") == "baseline" and m.get("mean_step_s")),
                    None)
        if base:
            after_step = Figure(fmt.step_time(base["mean_step_s"]), f"{profile.name} · mode baseline mean_step_s",
                                base["mean_step_s"])
            role = role or "profile baseline"
    diffs = tuple(setup.differences(before, after)) if before is not None and after is not None else ()
    blocking = [d for d in diffs if d.blocking]
    if blocking:
        slowdown = missing("not computed: the runs differ in " + "; ".join(d.text() for d in blocking))
    elif not before_step.missing and not after_step.missing and after_step.value:
        ratio = before_step.value / after_step.value
        slowdown = Figure(f"{ratio:.2f}×", f"{before_step.source} ÷ {after_step.source}", ratio)
    else:
        slowdown = missing("needs an incident run and a fixed or baseline run (or a profile)")
    return Comparison(before, after, role, before_step, after_step, slowdown, profile.name if profile else None,
                      diffs)


def _lost_hours(cmp: Comparison) -> Kpi:
    run = cmp.before
    if not cmp.comparable:
        return Kpi("Hours lost", missing("not computed: the runs ran on different hardware or models"))
    if run is None or cmp.before_step.missing or cmp.after_step.missing:
        return Kpi("Hours lost", missing("needs before and after step times"))
    runtime = getattr(run, "runtime_s", None) or (cmp.before_step.value * max(run.steps, 1))
    expected = cmp.after_step.value * max(run.steps, 1)
    gpus = int((getattr(run, "environment", {}) or {}).get("gpu_count") or 0)
    lost = max(0.0, runtime - expected) * max(gpus, 1) / 3600
    label = "GPU-hours lost" if gpus else "Compute-hours lost (CPU run)"
    text = f"{fmt.hours(lost * 3600)} h" if lost >= 0.05 else fmt.duration(lost * 3600)
    return Kpi(label, Figure(text, f"({fmt.duration(runtime)} − {run.steps:,} steps × "
                                              f"{cmp.after_step.text}) × {max(gpus, 1)} device(s)", lost))


def kpi_strip(inputs: ReportInput, cmp: Comparison) -> list[Kpi]:
    after_label = f" ({cmp.after_role})" if cmp.after_role else ""
    kpis = [
        Kpi("Runtime before → after" + after_label, _runtime(cmp.before),
            _runtime(cmp.after) if cmp.after is not None else missing("no fixed or baseline run attached")),
        Kpi("Mean step time before → after" + after_label, cmp.before_step, cmp.after_step),
        Kpi("Slowdown", cmp.slowdown, note=("Runs differ: " + "; ".join(d.text() for d in cmp.differences))
            if cmp.differences else ""),
        Kpi("GPU utilisation before → after", _gpu(cmp.before), _gpu(cmp.after) if cmp.after is not None else None),
        _lost_hours(cmp),
    ]
    seconds = sum(e.duration_s for e in inputs.entries)
    kpis.append(Kpi("Consultant hours", Figure(f"{fmt.hours(seconds)} h", f"{len(inputs.entries)} time entries",
                                               seconds / 3600) if inputs.entries
                    else missing("no time entries attached")))
    return kpis


def verification(cmp: Comparison) -> list[VerificationRow]:
    before, after = cmp.before, cmp.after
    none = missing("no run attached")
    return [
        VerificationRow("Runtime", _runtime(before) if before is not None else none,
                        _runtime(after) if after is not None else none),
        VerificationRow("Mean step time", cmp.before_step, cmp.after_step),
        VerificationRow("GPU utilisation", _gpu(before) if before is not None else none,
                        _gpu(after) if after is not None else none),
        VerificationRow("Final metric", final_metric(before) if before is not None else none,
                        final_metric(after) if after is not None else none),
    ]


def finite(values: Any) -> np.ndarray:
    arr = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype="float64")
    return arr[np.isfinite(arr)]


