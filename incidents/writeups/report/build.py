"""Assemble a report from its inputs: diagnosis, KPIs, charts, timeline, engagement, log entry.

The result is a plain value the one template set renders to the HTML page and to the PDF. Every
part that cannot be computed is listed in ``missing`` with the reason, so a report with a missing
role, no GPU metrics or a profile of another model still renders and says what is absent.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from incidents.diagnosis import Finding, diagnose_subject, prepare, setup, signals
from incidents.writeups.report import charts, engagement, kpis, logentry, markdown, quantities, timeline
from incidents.writeups.report import figures as fmt
from incidents.writeups.report import postmortem as pm
from incidents.writeups.report.environment import environment_line
from incidents.writeups.report.inputs import ProfileInput, ReportInput
from incidents.writeups.report.kpis import Comparison, Kpi, VerificationRow

SECTION_TITLES = {"summary": "Summary", "impact": "Impact", "detection": "Detection",
                  "root_cause": "Root cause", "went_well": "What went well", "went_wrong": "What went wrong",
                  "lessons": "Lessons"}
SECTION_PROMPTS = {
    "summary": "What happened, in two sentences a manager can forward.",
    "impact": "Who was affected and what it cost (time, money, a missed deadline).",
    "detection": "How the problem was noticed, and how it could have been noticed sooner.",
    "root_cause": "Why it happened, in the terms of the evidence below.",
    "went_well": "What helped: what was caught early, what was ready, what worked as planned.",
    "went_wrong": "What hurt: what was missed, what was slow, where luck played a part.",
    "lessons": "What to keep doing, what to change.",
}


@dataclass
class ProfileAttribution:
    """The profile's account of where step time went."""

    name: str
    provenance: str
    modes: list[dict[str, Any]] = field(default_factory=list)
    top_tensors: list[dict[str, Any]] = field(default_factory=list)
    top_tensors_mode: str = ""
    top_ops: list[dict[str, Any]] = field(default_factory=list)
    watch_share: float | None = None
    note: str = ""
    #: Model signature and watch configuration, as text; ``different_setup`` says why it is set aside.
    signature: str = ""
    watch: str = ""
    different_setup: str = ""
    #: Each mode's figures (``quantities.ModeFigures``) and what they pool ("2 rounds of 6 measured steps").
    mode_figures: list[quantities.ModeFigures] = field(default_factory=list)
    pooled: str = ""
    #: "baseline 0qz1lavj, watch:all:1 hlfwibgt": the W&B run each mode's last round wrote.
    mode_runs: str = ""
    #: Which steps the per-tensor hook times cover ("the mode's last round, run hlfwibgt").
    top_tensors_source: str = ""


@dataclass
class Report:
    inputs: ReportInput
    environment: str
    kpis: list[Kpi]
    verification: list[VerificationRow]
    comparison: Comparison
    findings: list[Finding]
    diagnosed_run: str
    timeline: list[timeline.Event]
    charts: list[charts.Chart]
    attributions: list[ProfileAttribution]
    phases: list[engagement.Phase]
    log_entry: str
    log_entry_generated: str
    sections: list[tuple[str, str, str, str]]   # key, title, sanitised html, prompt
    runs: list[dict[str, Any]]
    config: list[tuple[str, str]]
    missing: list[str]
    sources: dict[str, int]
    postmortem: pm.Postmortem | None = None
    #: How each attached run that ended early ended ("incident run abc was interrupted (Ctrl-C) at step …"),
    #: shown on the first page.
    endings: list[str] = field(default_factory=list)

    @property
    def fired(self) -> list[Finding]:
        return [f for f in self.findings if f.fired]

    @property
    def checked(self) -> list[Finding]:
        return [f for f in self.findings if not f.fired]

    @property
    def total_hours(self) -> str:
        return fmt.hours(engagement.total_seconds(self.inputs))

    def ref(self, source: str) -> int | None:
        return self.sources.get(source) if source else None

    def section(self, key: str) -> tuple[str, str, str, str]:
        return next(s for s in self.sections if s[0] == key)


def _attribution(profile: ProfileInput, run: Any) -> ProfileAttribution:
    attribution = _attribution_figures(profile)
    doc = profile.document
    mode = next((m for m in attribution.modes if m.get("mode") == attribution.top_tensors_mode), None)
    signature = setup.profile_signature(doc, profile.name)
    watch = setup.profile_watch(doc, mode, profile.name)
    attribution.signature = signature.text() if (signature.tensors or signature.parameters or signature.name) \
        else "model not recorded"
    attribution.watch = watch.text() + (f", {watch.histograms_per_logging_step} histograms per logging step"
                                        if watch.histograms_per_logging_step else "")
    if run is not None:
        stats = signals.histogram_stats(run.histograms)
        differs = setup.signature_mismatch(setup.run_signature(run, stats), signature,
                                           setup.run_watch(stats, "run"), watch)
        if differs:
            attribution.different_setup = "From a different setup: " + "; ".join(differs) + \
                ". Its figures are not used in the verdicts."
    return attribution


def _attribution_figures(profile: ProfileInput) -> ProfileAttribution:
    doc = profile.document
    if doc.get("modes"):
        machine = doc.get("machine") or {}
        hardware = doc.get("hardware") or {}
        device = hardware.get("gpu_name") or (f"CPU {hardware.get('cpu_model')}" if hardware.get("cpu_model") else "")
        provenance = (f"measured on {machine.get('hostname') or 'an unnamed host'} ({device}) at "
                      f"{doc.get('created_at') or 'an unrecorded time'}"
                      + (f" by `{doc['command']}`" if doc.get("command") else ""))
        modes = [m for m in doc["modes"] if isinstance(m, dict)]
        heavy = max((m for m in modes if m.get("kind") in ("watch", "fastwatch")),
                    key=lambda m: m.get("mean_step_s") or 0, default=None)
        runs = [(m.get("mode"), (m.get("wandb_run") or {}).get("id")) for m in modes]
        rounds = int((doc.get("settings") or {}).get("rounds") or 1)
        heavy_run = ((heavy or {}).get("wandb_run") or {}).get("id")
        tensors_source = (f"{profile.name} · mode {(heavy or {}).get('mode')} top_tensors, timed in "
                          + ("the mode's last round" if rounds > 1 else "its measured steps")
                          + (f" (run {heavy_run})" if heavy_run else ""))
        return ProfileAttribution(profile.name, provenance, modes, list((heavy or {}).get("top_tensors") or [])[:10],
                           (heavy or {}).get("mode", ""), [], (heavy or {}).get("hook_share"),
                           mode_figures=quantities.profile_modes(profile.name, doc),
                           pooled=quantities.rounds_text(doc),
                           mode_runs=", ".join(f"{mode} {rid}" for mode, rid in runs if rid),
                           top_tensors_source=tensors_source)
    steps = (f"{doc['steps']} steps" + (f" (labelled {doc['step_label']})" if doc.get("step_label") else "")
             if doc.get("steps") else "steps not labelled")
    return ProfileAttribution(profile.name, f"{doc.get('kind', 'profile')} with {steps}",
                       top_ops=list(doc.get("top_ops") or [])[:10], watch_share=doc.get("watch_share"),
                       note="; ".join(doc.get("warnings") or []))


def _config(run: Any) -> list[tuple[str, str]]:
    config = getattr(run, "config", {}) or {}
    items = []
    for key, value in list(config.items())[:16]:
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        items.append((str(key), str(value)[:200]))
    return items


def _timeline(inputs: ReportInput, header: pm.Postmortem) -> list[timeline.Event]:
    """The events, and a row for each milestone that is no event of its own (set by hand, an entry's end)."""
    events = timeline.merged(inputs)
    keys = {e.key for e in events}
    extra = [timeline.Event(f"milestone:{m.name}", m.at, f"{m.name.capitalize()}", m.figure.source.split(": ", 1)[-1])
             for m in header.milestones if m.at is not None and m.event_key not in keys]
    far = dt.datetime.max.replace(tzinfo=dt.UTC)
    return sorted(events + extra, key=lambda e: (e.at or far, e.key))


def _charts(inputs: ReportInput, cmp: kpis.Comparison, ordered: list[tuple[str, Any]],
            fired: list[Finding]) -> list[charts.Chart]:
    profile = inputs.profile
    medians = {role: f.step for role, f in cmp.figures.items()}
    modes = (profile.document.get("modes") or []) if profile else []
    return [charts.gpu_utilisation_chart(ordered),
            charts.step_time_distribution(ordered, modes, profile.name if profile else None, medians),
            charts.loss_curves(ordered), *charts.finding_metrics(ordered, fired)]


def build_incident_report(inputs: ReportInput) -> Report:
    missing: list[str] = []
    roles = {r.role for r in inputs.runs}
    for role, why in (("incident", "no incident run attached: diagnosis and “before” figures are absent"),
                      ("baseline", "no baseline run attached"), ("fixed", "no fixed run attached")):
        if role not in roles:
            missing.append(why)
    if not inputs.profiles:
        missing.append("no profile attached: no attribution of step time")
    subject_run = inputs.run("incident") or next((r.run for r in inputs.runs), None)
    profile = inputs.profile
    findings: list[Finding] = []
    subject = None
    if subject_run is not None:
        subject = prepare(subject_run, inputs.run("baseline"), profile.document if profile else None,
                          profile.name if profile else "profile")
        findings = diagnose_subject(subject)
        if subject.profile_mismatch:
            missing.append(subject.profile_mismatch)
    cmp = kpis.compare(inputs, subject)
    ordered = [(r.role, r.run) for r in sorted(inputs.runs, key=lambda r: ("incident", "baseline", "fixed",
                                                                              r.role).index(r.role))]
    chart_list = _charts(inputs, cmp, ordered, [f for f in findings if f.fired])
    # A chart that could not be drawn is said once, in the list of what the report lacks; a drawn
    # chart's note (a run without the series) is shown under it.
    missing += [c.missing for c in chart_list if c.missing and not c.uri]
    chart_list = [c for c in chart_list if c.uri]
    environment = inputs.environment or environment_line(inputs)
    strip = kpis.kpi_strip(inputs, cmp)
    header = pm.postmortem(inputs, next((k for k in strip if "lost" in k.label), None))
    generated = logentry.generate(inputs, cmp, findings, environment, subject, header.milestone("diagnosed"))
    verification = kpis.verification(cmp)
    sources: dict[str, int] = {}
    for fig in header.figures + [f for k in strip for f in (k.before, k.after) if f] + \
               [f for row in verification for f in (row.before, row.after)]:
        if fig.source and fig.source not in sources:
            sources[fig.source] = len(sources) + 1
    sections = [(key, title, markdown.safe_html(inputs.sections.get(key, "")), SECTION_PROMPTS[key])
                for key, title in SECTION_TITLES.items()]
    runs = [{"role": r.role, "id": r.run.run_id, "name": r.run.name, "project": r.run.project,
             "state": r.run.state, "steps": r.run.steps, "runtime": quantities.wall_time(r.run).text,
             "warnings": list(r.run.warnings)[:5]} for r in inputs.runs]
    endings = [f"The {r.role} run {fmt.run_label(r.run)} {text}." for r in inputs.runs
               if (text := signals.ending_text(r.run))]
    return Report(inputs, environment, strip, verification, cmp, findings,
                  fmt.run_label(subject_run) if subject_run is not None else "", _timeline(inputs, header),
                  chart_list, [_attribution(p, subject_run) for p in inputs.profiles], engagement.phases(inputs),
                  inputs.log_entry.strip() or generated, generated, sections, runs,
                  _config(subject_run) if subject_run is not None else [], missing, sources, header, endings)
