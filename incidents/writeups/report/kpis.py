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

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import setup, signals
from incidents.writeups.report import figures as fmt
from incidents.writeups.report import quantities as q
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
    #: Each attached run's figures by role, computed once (``quantities.RunFigures``).
    figures: dict[str, q.RunFigures] = field(default_factory=dict)

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
    figures = {r.role: q.RunFigures.of(r.role, r.run, inputs.profile, inputs.fix_after) for r in inputs.runs}
    none = missing("no run")
    before = inputs.run("incident")
    role: str | None
    after, role = inputs.run("fixed"), "fixed"
    if after is None:
        after, role = inputs.run("baseline"), "baseline"
    if after is None:
        role = None
    before_step = figures["incident"].step if before is not None else none
    after_step = figures[role].step if role is not None else none
    baseline = inputs.run("baseline")
    reference, ref_role, ref_step = None, None, missing("no baseline, profile baseline or fixed run")
    profile_base = _profile_baseline(inputs, subject) if baseline is None else None
    if baseline is not None:
        reference, ref_role, ref_step = baseline, "baseline", figures["baseline"].step
    elif profile_base is not None:
        ref_role, ref_step = "profile baseline", profile_base
    elif inputs.run("fixed") is not None:
        reference, ref_role, ref_step = inputs.run("fixed"), "fixed", figures["fixed"].step
    if after_step.missing and profile_base is not None:
        after_step, role = profile_base, role or "profile baseline"
    diffs = tuple(setup.differences(before, reference)) if before is not None and reference is not None else ()
    blocking = [d for d in diffs if d.blocking]
    if blocking:
        slowdown = missing("not computed: the runs differ in " + "; ".join(d.text() for d in blocking))
    else:
        slowdown = q.ratio(before_step, ref_step) or \
            missing("needs an incident run and a baseline or fixed run (or a profile)")
    return Comparison(before, after, role, before_step, after_step, slowdown, inputs.profile.name
                      if inputs.profile else None, diffs, ref_role, ref_step, reference, figures)


def whole_run(cmp: Comparison) -> tuple[float, float, int, str] | None:
    """(training span, span at the reference's median step, step intervals, source), when comparable."""
    run = cmp.before
    span = signals.training_span(run) if run is not None else None
    ref = cmp.reference_figure
    if span is None or not cmp.comparable or ref.value is None:
        return None
    seconds, first, last, source = span
    intervals = last - first
    return seconds, ref.value * intervals, intervals, f"{fmt.run_label(run)} {source}; {ref.source} × {intervals:,}"


def lost_hours(cmp: Comparison) -> Kpi:
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
    """The headline figures. Each is shown here only; the verification table holds what is not here."""
    after_label = f" ({cmp.after_role})" if cmp.after_role else ""
    before, after = cmp.figures.get("incident"), cmp.figures.get(cmp.after_role or "")
    none = missing("no run attached")
    kpis = [
        Kpi("Training span before → after" + after_label, before.span if before else none,
            after.span if after else missing("no fixed or baseline run attached")),
        Kpi("Median step time before → after" + after_label, cmp.before_step, cmp.after_step),
        Kpi(f"Slowdown (incident ÷ {cmp.reference_role}, median step)" if cmp.reference_role else "Slowdown",
            cmp.slowdown, note=("Runs differ: " + "; ".join(d.text() for d in cmp.differences))
            if cmp.differences else ""),
    ]
    if any(q.has_gpu_metrics(f.run) for f in cmp.figures.values()):
        kpis.append(Kpi("GPU utilisation before → after", before.gpu if before else none,
                        after.gpu if after else None))
    kpis.append(lost_hours(cmp))
    return kpis


def verification(cmp: Comparison) -> list[VerificationRow]:
    """What the fix's run shows beyond the key figures: the outcome, and whether it logged histograms."""
    rows = []
    result = q.outcome(cmp.before, cmp.after)
    if result is not None:
        rows.append(VerificationRow(f"Final {result.metric} ({result.kind})", result.before, result.after))
    fixed = cmp.figures.get("fixed")
    if fixed is not None and fixed.logging is not None:
        rows.append(VerificationRow("Watch logging step reached", missing("—"), fixed.logging))
    return rows


def finite(values: Any) -> np.ndarray:
    arr = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype="float64")
    return arr[np.isfinite(arr)]
