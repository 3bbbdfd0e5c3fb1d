"""The KPI strip and the verification table, computed from the attached runs, profile and entries.

"Before" is the incident run; "after" is the fixed run, else the baseline run, else the profile's
baseline mode — the label always says which, and every figure names its source. A missing part is
stated ("no fixed or baseline run attached"), never left blank or guessed.

A report states one slowdown: the incident's median step time over the baseline's (the run without
watch), else over the profile's baseline mode, else over the fixed run, and the label names which.
The watch-overhead verdict and the log entry state the same figure (same runs, same medians). The
whole-run comparison uses the history's training span (start-up, profiler capture and teardown left
out) and is labelled a whole-run ratio; hours lost are computed only between runs of the same model,
hardware, batch size and sequence length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import quality, setup, signals
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
    #: Every recorded fact the compared runs disagree on (model, batch, hardware…), shown beside the slowdown.
    differences: tuple[Any, ...] = ()
    #: What the slowdown is measured against (baseline, profile baseline, fixed) and its median step.
    reference_role: str | None = None
    reference_step: Figure | None = None
    reference: Any | None = None

    @property
    def comparable(self) -> bool:
        return not any(d.blocking for d in self.differences)

    @property
    def same_workload(self) -> bool:
        """Comparable and the same batch size and sequence length: hours lost may be computed."""
        return self.comparable and not any(d.what in WORKLOAD for d in self.differences)

    @property
    def reference_figure(self) -> Figure:
        return self.reference_step if self.reference_step is not None else self.after_step


#: Beyond the blocking differences, what must match before hours lost are computed.
WORKLOAD = ("batch size", "sequence length")


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
    def read(r: Any) -> tuple[float | None, str]:
        util, samples = signals.run_gpu(r)
        if util is not None and samples < signals.MIN_GPU_SAMPLES:
            return None, ""
        return util, f"system.gpu.*.gpu, steady-state mean of {samples} samples"

    if run is not None and signals.gpu_columns(getattr(run, "system", None)) \
            and signals.run_gpu(run)[1] < signals.MIN_GPU_SAMPLES:
        return missing(f"not stated: {signals.run_gpu(run)[1]} steady-state GPU samples (fewer than "
                       f"{signals.MIN_GPU_SAMPLES})")
    return _run_figure(run, read, "not recorded (no GPU metrics)", fmt.percent)


def _step(run: Any) -> Figure:
    return _run_figure(run, signals.median_step_time, "no step times", fmt.step_time)


def _span(run: Any) -> tuple[float | None, str]:
    span = signals.training_span(run)
    if span is not None:
        return span[0], f"training span: {span[3]}"
    return getattr(run, "runtime_s", None), "runtime (_runtime), whole run"


def _runtime(run: Any) -> Figure:
    return _run_figure(run, _span, "runtime not recorded", fmt.duration)


def final_metric(run: Any, prefer: str | None = None) -> Figure:
    """The outcome: a held-out metric (quality first, then loss) when the run has one, else training
    accuracy, else the loss. ``prefer`` names a metric to use when this run has it (so two runs are
    compared on the same one)."""
    if run is None:
        return missing("no run")
    history = getattr(run, "history", None)
    if history is None or history.empty:
        return missing("no history")
    if prefer and prefer in history.columns:
        return _last(run, history, prefer)
    for column, _ in quality.held_out_metrics(history):
        if pd.to_numeric(history[column], errors="coerce").notna().any():
            return _last(run, history, column)
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


def _profile_baseline(inputs: ReportInput, subject: Any) -> Figure | None:
    """The profile's baseline mode, only when the profile is of this setup and watch configuration."""
    profile = inputs.profile
    if not (profile and profile.document.get("modes")):
        return None
    if subject is not None and (subject.profile is None or subject.watch_configs_differ):
        return None
    base = next((m for m in profile.document["modes"] if m.get("kind") == "baseline" and m.get("mean_step_s")), None)
    if base is None:
        return None
    median = base.get("median_step_s")
    value, which = (median, "median_step_s") if isinstance(median, int | float) and median > 0 \
        else (base["mean_step_s"], "mean_step_s")
    return Figure(fmt.step_time(value), f"{profile.name} · mode baseline {which}", float(value))


def compare(inputs: ReportInput, subject: Any = None) -> Comparison:
    """The one primary comparison, and the before/after pair of the verification table."""
    before = inputs.run("incident")
    after, role = inputs.run("fixed"), "fixed"
    if after is None:
        after, role = inputs.run("baseline"), "baseline"
    if after is None:
        role = None
    before_step, after_step = _step(before), _step(after)
    baseline = inputs.run("baseline")
    reference, ref_role, ref_step = None, None, missing("no baseline, profile baseline or fixed run")
    profile_base = _profile_baseline(inputs, subject) if baseline is None else None
    if baseline is not None:
        reference, ref_role, ref_step = baseline, "baseline", _step(baseline)
    elif profile_base is not None:
        ref_role, ref_step = "profile baseline", profile_base
    elif inputs.run("fixed") is not None:
        reference, ref_role, ref_step = inputs.run("fixed"), "fixed", _step(inputs.run("fixed"))
    if after_step.missing and profile_base is not None:
        after_step, role = profile_base, role or "profile baseline"
    diffs = tuple(setup.differences(before, reference)) if before is not None and reference is not None else ()
    blocking = [d for d in diffs if d.blocking]
    if blocking:
        slowdown = missing("not computed: the runs differ in " + "; ".join(d.text() for d in blocking))
    elif not before_step.missing and not ref_step.missing and ref_step.value:
        ratio = before_step.value / ref_step.value
        slowdown = Figure(f"{ratio:.2f}×", f"{before_step.source} ÷ {ref_step.source}", ratio)
    else:
        slowdown = missing("needs an incident run and a baseline or fixed run (or a profile)")
    return Comparison(before, after, role, before_step, after_step, slowdown, inputs.profile.name
                      if inputs.profile else None, diffs, ref_role, ref_step, reference)


def whole_run(cmp: Comparison) -> tuple[float, float, int, str] | None:
    """(training span, span at the reference's median step, step intervals, source), when comparable."""
    run = cmp.before
    span = signals.training_span(run) if run is not None else None
    ref = cmp.reference_figure
    if span is None or not cmp.comparable or ref.missing:
        return None
    seconds, first, last, source = span
    intervals = last - first
    return seconds, ref.value * intervals, intervals, f"{fmt.run_label(run)} {source}; {ref.source} × {intervals:,}"


def _lost_hours(cmp: Comparison) -> Kpi:
    run = cmp.before
    if not cmp.comparable:
        return Kpi("Hours lost", missing("not computed: the runs ran on different hardware or models"))
    if not cmp.same_workload:
        other = "; ".join(d.text() for d in cmp.differences if d.what in WORKLOAD)
        return Kpi("Hours lost", missing(f"not computed: the runs differ in {other}"))
    whole = whole_run(cmp)
    if run is None or cmp.before_step.missing or whole is None:
        return Kpi("Hours lost", missing("needs before and after step times"))
    seconds, expected, intervals, source = whole
    gpus = int((getattr(run, "environment", {}) or {}).get("gpu_count") or 0)
    lost = max(0.0, seconds - expected) * max(gpus, 1) / 3600
    label = "GPU-hours lost" if gpus else "Compute-hours lost (CPU run)"
    text = f"{fmt.hours(lost * 3600)} h" if lost >= 0.05 else fmt.duration(lost * 3600)
    return Kpi(label, Figure(text, f"({fmt.duration(seconds)} training span − {intervals:,} steps × "
                                   f"{cmp.reference_figure.text}) × {max(gpus, 1)} device(s); {source}", lost))


def kpi_strip(inputs: ReportInput, cmp: Comparison) -> list[Kpi]:
    after_label = f" ({cmp.after_role})" if cmp.after_role else ""
    kpis = [
        Kpi("Runtime before → after" + after_label, _runtime(cmp.before),
            _runtime(cmp.after) if cmp.after is not None else missing("no fixed or baseline run attached")),
        Kpi("Median step time before → after" + after_label, cmp.before_step, cmp.after_step),
        Kpi(f"Slowdown (incident ÷ {cmp.reference_role}, median step)" if cmp.reference_role else "Slowdown",
            cmp.slowdown, note=("Runs differ: " + "; ".join(d.text() for d in cmp.differences))
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
        VerificationRow("Median step time", cmp.before_step, cmp.after_step),
        VerificationRow("GPU utilisation", _gpu(before) if before is not None else none,
                        _gpu(after) if after is not None else none),
        VerificationRow("Final metric", *outcome(before, after, none)),
    ]


def outcome(before: Any, after: Any, none: Figure) -> tuple[Figure, Figure]:
    """Both runs' final metric, on the same metric: the incident's choice (a held-out one first)."""
    first = final_metric(before) if before is not None else none
    name = first.source.split(" · history ")[-1].split(" at step ")[0] if not first.missing else None
    return first, final_metric(after, prefer=name) if after is not None else none


def finite(values: Any) -> np.ndarray:
    arr = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype="float64")
    return arr[np.isfinite(arr)]


