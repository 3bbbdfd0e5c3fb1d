"""The audit's rules: each turns script facts into findings with a severity, evidence and a fix diff.

Severities: ``error`` (will cost a run hours), ``warn`` (likely slows every step), ``info`` (noted,
not a problem). The watch rule uses the diagnosis's own thresholds (histograms every ≤ 50 steps on a
model over 10M parameters), so a script the audit passes is one the incident report would not blame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from incidents.tools.audit.cost import Calibration
from incidents.tools.audit.models import ModelSize
from incidents.tools.audit.script import Condition, ScriptFacts, Site, WatchCall
from incidents.tools.audit.watch_rule import FIX_CALL, FIX_TEXT, judge_watch
from incidents.tools.audit.watch_rule import SEVERITIES as SEVERITIES  # the audit reads them beside the rules

TRAINER_FIX = ("set WANDB_WATCH to gradients (or false) for the Trainer; it logs every max(100, logging_steps) "
               "steps")


@dataclass
class AuditFinding:
    rule: str
    severity: str
    line: int
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    prediction: dict[str, Any] | None = None
    fix: str = ""
    diff: str = ""
    #: For a watch whose log/log_freq the file does not determine: the cost over the plausible values.
    prediction_range: dict[str, Any] | None = None

    def to_dict(self, script: str) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "location": f"{script}:{self.line}",
                "line": self.line, "message": self.message, "evidence": self.evidence,
                "prediction": self.prediction, "prediction_range": self.prediction_range, "fix": self.fix,
                "diff": self.diff}


def _span(start: int, count: int) -> str:
    return f"{start}" if count == 1 else f"{start - 1 if count == 0 else start},{count}"


def diff(facts: ScriptFacts, start: int, end: int, new_lines: list[str]) -> str:
    """A unified diff (one line of context, as ``diff -U1``) of the script with lines ``start..end``
    replaced by ``new_lines``; built from those lines alone, so a finding costs the same in any file size."""
    old = facts.lines[start - 1: end]
    new = list(new_lines)
    while old and new and old[0] == new[0]:  # unchanged lines at either end are context, as difflib shows them
        old, new, start = old[1:], new[1:], start + 1
    while old and new and old[-1] == new[-1]:
        old, new, end = old[:-1], new[:-1], end - 1
    if not old and not new:
        return ""
    before = facts.lines[max(start - 2, 0): start - 1]
    after = facts.lines[end: end + 1]
    first = start - len(before)
    old_count, new_count = len(before) + len(old) + len(after), len(before) + len(new) + len(after)
    name = facts.path.name
    lines = [f"--- a/{name}", f"+++ b/{name}", f"@@ -{_span(first, old_count)} +{_span(first, new_count)} @@",
             *(" " + line for line in before), *("-" + line for line in old), *("+" + line for line in new),
             *(" " + line for line in after)]
    return "".join(line + "\n" for line in lines)


def _replace(facts: ScriptFacts, site: Site | WatchCall, new_text: str) -> str:
    block = "\n".join(facts.lines[site.line - 1: site.end_line])
    if site.source not in block:
        return ""
    return diff(facts, site.line, site.end_line, block.replace(site.source, new_text, 1).split("\n"))


def watch_findings(facts: ScriptFacts, model: ModelSize | None, calibration: Calibration,
                   run_steps: int) -> list[AuditFinding]:
    out = []
    for call in facts.watches:
        judged = judge_watch(facts, call, model, calibration, run_steps)
        fix = diff_text = ""
        if judged.get("fix") and call.fixable:
            fix = FIX_TEXT
            diff_text = _replace(facts, call, f"{call.source.split('(', 1)[0]}({call.model or 'model'}, {FIX_CALL})")
        elif judged.get("fix"):
            fix = TRAINER_FIX
        prediction = judged.get("prediction")
        ranged = prediction if prediction and prediction.get("range") else None
        finding = AuditFinding("wandb_watch", judged["severity"], call.line, judged["message"], judged["evidence"],
                               None if ranged else prediction, fix, diff_text, prediction_range=ranged)
        out.append(conditioned(finding, call.condition))
    return out


def conditioned(finding: AuditFinding, condition: Condition) -> AuditFinding:
    """Code under a constant-false test is info (it never runs); under an undecided one it keeps its severity
    and the finding names the test."""
    if condition.state == "dead":
        finding.severity = "info"
        finding.message += f" — {'; '.join(condition.notes)}, so it never runs"
        finding.fix, finding.diff = "", ""
    elif condition.state == "undecided":
        finding.message += f" — {'; '.join(condition.notes)}"
    return finding


def profiler_findings(facts: ScriptFacts) -> list[AuditFinding]:
    out = []
    for site in facts.profilers:
        if site.detail == "scheduled":
            continue
        new = re.sub(r"profile\(", "profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1), ",
                     site.source, count=1).replace(", )", ")")
        out.append(conditioned(AuditFinding(
            "profiler_on", "warn", site.line, "torch.profiler records every step of the run (no schedule)",
            {"call": site.source}, None, "profile a few steps with a schedule (and call prof.step() each step), or "
                                         "remove the profiler for production runs", _replace(facts, site, new)),
            site.condition))
    return out


def loader_findings(facts: ScriptFacts) -> list[AuditFinding]:
    out = []
    extra = "num_workers=4, pin_memory=True" if facts.uses_cuda else "num_workers=4"
    for site in facts.loaders:
        if site.detail:
            new = re.sub(r"num_workers\s*=\s*0", extra, site.source, count=1)
        else:
            new = site.source[:-1].rstrip().rstrip(",") + f", {extra})"
        out.append(conditioned(AuditFinding(
            "dataloader_workers", "warn", site.line,
            "DataLoader loads batches in the training process (no workers): the step waits on it",
            {"call": site.source}, None, "load in worker processes", _replace(facts, site, new)), site.condition))
    return out


def device_findings(facts: ScriptFacts) -> list[AuditFinding]:
    """A model the script builds but never moves to the GPU it uses; a trainer that places the model
    on the device itself (Lightning with accelerator="gpu", Hugging Face's Trainer) moves it."""
    if not facts.uses_cuda or not facts.model_names or facts.placed_by:
        return []
    unmoved = {n: line for n, line in facts.model_names.items() if n not in facts.moved}
    if not unmoved:
        return []
    name, line = next(iter(unmoved.items()))
    text = facts.lines[line - 1]
    indent = text[: len(text) - len(text.lstrip())]
    device = facts.device_name or '"cuda"'
    return [AuditFinding("model_not_on_device", "warn", line,
                         f"the script uses CUDA but never moves {name} to the device: it trains on the CPU",
                         {"model": name}, None, f"{name}.to({device})",
                         diff(facts, line, line, [text, f"{indent}{name}.to({device})"]))]


def loop_findings(facts: ScriptFacts) -> list[AuditFinding]:
    out = []
    for site in facts.syncs:
        line = facts.lines[site.line - 1]
        removable = line.strip() == site.source
        out.append(conditioned(AuditFinding(
            "sync_in_step", "warn", site.line, "torch.cuda.synchronize() in the step loop stalls the GPU queue every step",
            {"call": site.source}, None, "remove it (time steps with CUDA events if needed)",
            diff(facts, site.line, site.line, []) if removable else ""), site.condition))
    severity = "warn" if facts.uses_cuda else "info"
    for site in facts.items:
        line = facts.lines[site.line - 1]
        accumulates = "+=" in line and site.source.endswith(".item()")
        new = site.source[: -len(".item()")] + ".detach()" if accumulates else site.source
        out.append(conditioned(AuditFinding(
            "item_in_step", severity, site.line, f"{site.source} in the step loop copies to the host every step"
            + (" (a GPU sync)" if facts.uses_cuda else " (cheap on a CPU run)"), {"call": site.source}, None,
            "keep the running value as a tensor and call .item() only when you log it",
            _replace(facts, site, new) if accumulates else ""), site.condition))
    return out
