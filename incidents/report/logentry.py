"""The retainer log entry: one paragraph in the reference form, then one line per phase.

Form: "<project> <what was investigated>: <stack and hardware>; <key evidence with numbers>; <cause>;
<fix>; <result>; <hours>h." Every number comes from the comparison and the diagnosis computed for
the report, so the entry and the report never disagree.
"""

from __future__ import annotations

from collections import Counter

from incidents.diagnosis import Finding
from incidents.report import engagement
from incidents.report import figures as fmt
from incidents.report.inputs import ReportInput
from incidents.report.kpis import Comparison


def _project(inputs: ReportInput) -> str:
    projects = Counter(e.project for e in inputs.entries if e.project)
    if projects:
        return projects.most_common(1)[0][0]
    run = inputs.run("incident")
    return getattr(run, "project", "") or ""


def _first_sentence(text: str) -> str:
    head = text.split(". ")[0].rstrip(".")
    return head[:1].lower() + head[1:] if head[:2] != head[:2].upper() else head


def _evidence_and_cause(cmp: Comparison, fired: list[Finding]) -> tuple[str, str]:
    watch = next((f for f in fired if f.rule == "watch_overhead"), None)
    if watch is not None:
        ev = watch.evidence
        parts = []
        if not cmp.slowdown.missing:
            parts.append(f"steps {cmp.slowdown.text} slower than {cmp.after_role} "
                         f"({cmp.before_step.text} vs {cmp.after_step.text})")
        if ev.get("watch_share") is not None:
            parts.append(f"{ev['watch_share']:.0%} of step time in watch hooks")
        if ev.get("gpu_util_mean") is not None:
            parts.append(f"GPU utilisation {ev['gpu_util_mean']:.1f} %")
        interval = ev.get("histogram_interval_steps")
        parts.append(f"histograms of {ev['tensors']} tensors every {interval} step{'s' if interval != 1 else ''}")
        cause = (f'wandb.watch(log="{ev["log"]}", log_freq={interval}) computing histograms of every tensor '
                 "on the training thread")
        return ", ".join(parts), cause
    if fired:
        first = fired[0]
        head, _, detail = first.verdict.partition(": ")
        evidence = _first_sentence(detail) if detail else _first_sentence(first.verdict)
        return evidence, head[:1].lower() + head[1:] if detail else first.rule.replace("_", " ")
    numbers = (f"steps {cmp.slowdown.text} slower than {cmp.after_role} ({cmp.before_step.text} vs "
               f"{cmp.after_step.text})") if not cmp.slowdown.missing else "no anomaly in the attached evidence"
    return numbers, "no defect found by the automatic checks"


def _fix(inputs: ReportInput, fired: list[Finding]) -> str:
    if inputs.fix_after.strip():
        line = next(line.strip() for line in inputs.fix_after.splitlines() if line.strip())
        return f"changed to {line}"
    for f in fired:
        fixes = f.evidence.get("fixes")
        if fixes:
            return f"proposed {fixes[0]['code']}"
    return "fix pending"


def _result(cmp: Comparison, fired: list[Finding]) -> str:
    if cmp.after_role == "fixed" and not cmp.after_step.missing:
        speed = f", {cmp.slowdown.text} faster" if not cmp.slowdown.missing else ""
        return f"fixed run at {cmp.after_step.text} per step{speed}"
    watch = next((f for f in fired if f.rule == "watch_overhead"), None)
    predicted = watch.evidence.get("predicted_step_s") if watch else None
    if predicted:
        return f"expected {fmt.step_time(predicted)} per step once fixed (measured {cmp.after_role or 'baseline'})"
    return "no fixed run attached yet"


def generate(inputs: ReportInput, cmp: Comparison, findings: list[Finding], environment: str = "") -> str:
    """The paragraph and the per-phase lines, as plain text (the consultant may edit it)."""
    fired = [f for f in findings if f.fired]
    evidence, cause = _evidence_and_cause(cmp, fired)
    hours = fmt.hours(engagement.total_seconds(inputs))
    stack = environment or inputs.environment or "environment not recorded"
    project = _project(inputs)
    head = f"{project} {inputs.title}".strip()
    paragraph = f"{head}: {stack}; {evidence}; {cause}; {_fix(inputs, fired)}; {_result(cmp, fired)}; {hours}h."
    lines = [p.line + "." for p in engagement.phases(inputs)]
    return "\n".join([paragraph, *lines])
