"""The retainer log entry: one paragraph in the reference form, then one line per phase, then footnotes.

Form: "<project> <title>: <stack and hardware>; <model>; <watch configuration>; <costliest tensor>;
<hook overhead>; <whole-run runtime>; <method and date>; <cause>; <fix>; <result>; <hours>h." Each
clause appears only when the evidence holds it, and every number carries a footnote naming its source;
what a missing fixed run leaves unmeasured is said, not skipped. Numbers come from the comparison
and the diagnosis computed for the report, so the entry and the report never disagree.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from incidents.diagnosis import Finding, setup
from incidents.writeups.report import engagement
from incidents.writeups.report import figures as fmt
from incidents.writeups.report import quantities as q
from incidents.writeups.report.inputs import ReportInput
from incidents.writeups.report.kpis import Comparison, whole_run


class _Notes:
    """Clauses with footnote numbers: ``add("text", "source")`` → ``text [n]``."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.sources: list[str] = []

    def add(self, text: str, source: str | None = None) -> None:
        text = fmt.clause(text)
        if not text:
            return
        if source:
            if source not in self.sources:
                self.sources.append(source)
            text = f"{text} [{self.sources.index(source) + 1}]"
        self.clauses.append(text)


def _project(inputs: ReportInput) -> str:
    projects = Counter(e.project for e in inputs.entries if e.project)
    if projects:
        return projects.most_common(1)[0][0]
    run = inputs.run("incident")
    return getattr(run, "project", "") or ""


def _first_sentence(text: str) -> str:
    return fmt.lower_first(text.split(". ")[0].rstrip("."))


def _usable_profile(inputs: ReportInput, subject: Any) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(name, document, watch mode) when the profile is of this setup and this watch configuration."""
    profile = inputs.profile
    facts = getattr(subject, "profile", None)
    if profile is None or facts is None or getattr(subject, "watch_configs_differ", False) or not facts.watch_mode:
        return None
    return profile.name, profile.document, facts.watch_mode


def _model(notes: _Notes, inputs: ReportInput, subject: Any, usable: Any) -> None:
    run = inputs.run("incident")
    if run is None or subject is None:
        return
    sig = setup.run_signature(run, subject.stats)
    name, source = sig.name, f"run {fmt.run_label(run)} config"
    if name and name == (getattr(run, "config", {}) or {}).get("preset"):
        name = f"{name}-preset model"
    if usable is not None:
        model = usable[1].get("model") or {}
        if model.get("name"):
            name = model["name"] + (f" ({model['preset']} preset)" if model.get("preset") else "")
            source = f"{usable[0]} · model"
    if not (name or sig.parameters):
        return
    size = f"{sig.parameters:,}-parameter " if sig.parameters else ""
    tensors = f", {sig.tensors} named parameter tensors" if sig.tensors else ""
    notes.add(f"{size}{name or 'model'}{tensors}", source if name else f"run {fmt.run_label(run)} watch histograms")


def _watch(notes: _Notes, watch: Finding | None, usable: Any) -> None:
    if watch is None:
        return
    ev = watch.evidence
    interval = ev.get("histogram_interval_steps")
    firing = "every step" if interval == 1 else f"every {interval} steps"
    notes.add(f'wandb.watch(model, log="{ev["log"]}", log_freq={interval}) hooks firing {firing}',
              f"{ev.get('mean_step_source', '').split(' ')[0] or 'incident'} run watch histograms "
              f"({ev['tensors']} tensors)")
    if usable is None:
        return
    name, _, mode = usable
    top = _costliest(mode)
    if top is not None:
        tensor, elements, total, halves = top
        size = f" ({elements / 1e6:.1f}M elements)" if elements and elements >= 1e5 else \
            (f" ({elements:,} elements)" if elements else "")
        split = " (" + " + ".join(f"{kind} {ms:,.1f}" for kind, ms in halves) + ")" if len(halves) > 1 else ""
        notes.add(f"costliest tensor {tensor}{size} alone {total:,.1f} ms/step{split}",
                  f"{name} · mode {mode['mode']} top_tensors")
    hooks = next((m for m in q.profile_modes(name, usable[1]) if m.mode == mode.get("mode")), None)
    if hooks is not None and not hooks.hook_wall.missing:
        cpu = f"{hooks.hook_cpu.text}/step of CPU time on the training thread" if not hooks.hook_cpu.missing \
            else "CPU time not recorded"
        notes.add(f"watch hooks {hooks.hook_wall.text}/step of wall-clock time ({cpu}; the verdict's share of step "
                  "time is wall-clock)", "; ".join(f.source for f in (hooks.hook_wall, hooks.hook_cpu) if not f.missing))


def _costliest(mode: dict[str, Any]) -> tuple[str, int | None, float, list[tuple[str, float]]] | None:
    """The tensor whose histograms cost most per step; under log="all" both halves (its gradient's and
    its parameter's histogram) count, since removing the tensor from watch removes both."""
    per: dict[str, list[tuple[str, float, int | None]]] = {}
    for row in mode.get("top_tensors") or []:
        if row.get("mean_ms") is None or not row.get("name"):
            continue
        kind, _, tensor = str(row["name"]).partition("/")
        if not tensor or kind not in ("gradients", "parameters"):
            kind, tensor = "", str(row["name"])
        per.setdefault(tensor, []).append((kind, float(row["mean_ms"]), row.get("numel")))
    if not per:
        return None
    tensor, halves = max(per.items(), key=lambda item: sum(ms for _, ms, _ in item[1]))
    if mode.get("log") != "all":
        halves = halves[:1]
    return tensor, halves[0][2], sum(ms for _, ms, _ in halves), [(k, ms) for k, ms, _ in halves if k]


def _runtime(notes: _Notes, inputs: ReportInput, cmp: Comparison, usable: Any) -> None:
    whole = whole_run(cmp)
    if whole is not None:
        seconds, expected, intervals, source = whole
        ratio = seconds / expected if expected else None
        notes.add(f"training span {fmt.duration(seconds)} for {intervals:,} steps against {fmt.duration(expected)} "
                  f"at the {cmp.reference_role}'s median step" + (f" (whole-run ratio {ratio:.1f}×)" if ratio else ""),
                  source)
    if usable is None:
        return
    name, doc, mode = usable
    steps = (doc.get("settings") or {}).get("project_steps")
    base = next((m for m in doc.get("modes") or [] if m.get("kind") == "baseline"), None)
    if steps and base and base.get("projected_run_s") and mode.get("projected_run_s"):
        notes.add(f"projected {steps:,}-step run: {fmt.duration(base['projected_run_s'])} without watch, "
                  f"{fmt.duration(mode['projected_run_s'])} with it",
                  f"{name} · projected_run_s: each mode's mean step ({q.rounds_text(doc)}) × {steps:,}")


def _method(notes: _Notes, inputs: ReportInput, cmp: Comparison, subject: Any, usable: Any,
            diagnosed: Any = None) -> None:
    """A run without watch, otherwise the same, is the null-hypothesis test; the date is the postmortem's
    *diagnosed* milestone (the same figure the report's header shows)."""
    baseline = inputs.run("baseline")
    watched = subject is not None and not subject.stats.empty
    at = getattr(diagnosed, "at", None)
    date = f" {at:%-d %B %Y}" if at else ""
    when = diagnosed.figure.source if at else ""
    if baseline is not None and watched and cmp.comparable and len(baseline.histograms) == 0:
        figures = cmp.figures["baseline"]
        took = f": {figures.span.text} training span" if not figures.span.missing else ""
        per = f", {figures.step.text}/step median" if not figures.step.missing else ""
        notes.add(f"diagnosed{date} by null-hypothesis test (training without wandb.watch(){took}{per})",
                  "; ".join(x for x in (f"baseline run {fmt.run_label(baseline)}", when) if x))
    elif usable is not None and at:
        notes.add(f"diagnosed{date} by null-hypothesis test (reproducer modes with and without wandb.watch())", when)
    elif at:
        notes.add(f"diagnosed{date}", when)


def _evidence_and_cause(cmp: Comparison, fired: list[Finding]) -> tuple[str, str]:
    watch = next((f for f in fired if f.rule == "watch_overhead"), None)
    if watch is not None:
        ev = watch.evidence
        parts = []
        if not cmp.slowdown.missing:
            parts.append(f"steps {cmp.slowdown.text} slower than {cmp.reference_role} "
                         f"({cmp.before_step.text} vs {cmp.reference_figure.text}, median)")
        if ev.get("watch_share") is not None:
            estimate = "an estimated " if ev.get("share_is_estimate") else ""
            parts.append(f"{estimate}{fmt.percent(ev['watch_share'] * 100)} of step time in watch hooks")
        if ev.get("gpu_util_mean") is not None:
            parts.append(f"GPU utilisation {ev['gpu_util_mean']:.1f} %")
        cause = (f'wandb.watch(log="{ev["log"]}", log_freq={ev.get("histogram_interval_steps")}) computing '
                 "histograms of every tensor on the training thread")
        return ", ".join(parts), cause
    if fired:
        first = fired[0]
        head, _, detail = first.verdict.partition(": ")
        evidence = _first_sentence(detail) if detail else _first_sentence(first.verdict)
        return evidence, fmt.lower_first(head) if detail else first.title.lower()
    numbers = (f"steps {cmp.slowdown.text} slower than {cmp.reference_role} ({cmp.before_step.text} vs "
               f"{cmp.reference_figure.text}, median)") if not cmp.slowdown.missing \
        else "no anomaly in the attached evidence"
    return numbers, "no defect found by the automatic checks"


def _fix(inputs: ReportInput, fired: list[Finding]) -> str:
    if inputs.fix_after.strip():
        line = next(line.strip() for line in inputs.fix_after.splitlines() if line.strip())
        return f"fix: {line}"
    for f in fired:
        fixes = f.evidence.get("fixes")
        if fixes:
            return f"proposed fix: {fixes[0]['code']}"
    return "fix pending"


def _result(notes: _Notes, cmp: Comparison, fired: list[Finding]) -> None:
    fixed = cmp.figures.get("fixed") if cmp.after_role == "fixed" else None
    if fixed is not None and not fixed.step.missing:
        parts = ([f"{fixed.span.text} training span"] if not fixed.span.missing else []) + \
            [f"{fixed.step.text}/step median"] + ([f"GPU {fixed.gpu.text}"] if not fixed.gpu.missing else [])
        head, sources = "fixed run", [fixed.step.source]
        if fixed.logging is not None and fixed.logging.value == 0:
            head = (f"fixed run, which {fixed.logging.text}, so its step time leaves out the histograms the fix "
                    "still logs")
            sources.append(fixed.logging.source)
        notes.add(f"{head}: {', '.join(parts)}", "; ".join(sources))
        result = q.outcome(cmp.before, fixed.run)
        if result is not None and result.same is not None:
            what = f"final {result.metric} (held out)" if result.held_out else \
                f"{result.metric} at the last step (a training-loss point, not a held-out metric)"
            notes.add(f"{'same' if result.same else 'changed'} {what}: {result.before.text} before, "
                      f"{result.after.text} after", f"{result.before.source}; {result.after.source}")
        return
    watch = next((f for f in fired if f.rule == "watch_overhead"), None)
    predicted = watch.evidence.get("predicted_step_s") if watch else None
    if watch is not None and predicted:
        what = "measured" if watch.evidence.get("predicted_source") == watch.evidence.get("baseline_source") \
            else "estimated"
        notes.add(f"expected {fmt.step_time(predicted)} per step once fixed ({what}: "
                  f"{watch.evidence.get('predicted_source') or cmp.reference_role or 'baseline'})")
    notes.add("no fixed run yet: the fixed run's runtime, GPU utilisation and final metric are not measured")


def generate(inputs: ReportInput, cmp: Comparison, findings: list[Finding], environment: str = "",
             subject: Any = None, diagnosed: Any = None) -> str:
    """The paragraph, the per-phase lines and the footnotes, as plain text (the consultant may edit it)."""
    fired = [f for f in findings if f.fired]
    watch = next((f for f in fired if f.rule == "watch_overhead"), None)
    usable = _usable_profile(inputs, subject)
    notes = _Notes()
    notes.add(environment or inputs.environment or "environment not recorded")
    _model(notes, inputs, subject, usable)
    _watch(notes, watch, usable)
    evidence, cause = _evidence_and_cause(cmp, fired)
    share_source = watch.evidence.get("watch_share_source") if watch and watch.evidence.get("watch_share") \
        is not None else None
    notes.add(evidence, "; ".join(x for x in (cmp.slowdown.source, share_source) if x) or None)
    differences = "; ".join(d.text() for d in cmp.differences)
    if differences:
        notes.add(f"incident and {cmp.reference_role} runs differ ({differences})")
    _runtime(notes, inputs, cmp, usable)
    _method(notes, inputs, cmp, subject, usable, diagnosed)
    notes.add(cause)
    notes.add(_fix(inputs, fired))
    _result(notes, cmp, fired)
    seconds = engagement.total_seconds(inputs)
    if seconds:
        notes.add(f"{fmt.hours(seconds)}h")
    project = _project(inputs)
    head = f"{project} — {fmt.clause(inputs.title)}" if project else fmt.clause(inputs.title)
    paragraph = f"{head}: " + "; ".join(notes.clauses) + "."
    lines = [fmt.clause(p.line) + "." for p in engagement.phases(inputs)]
    footnotes = [f"[{i}] {source}" for i, source in enumerate(notes.sources, start=1)]
    return "\n".join([paragraph, *lines, *footnotes])
