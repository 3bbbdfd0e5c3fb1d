"""The audit's rules: each turns script facts into findings with a severity, evidence and a fix diff.

Severities: ``error`` (will cost a run hours), ``warn`` (likely slows every step), ``info`` (noted,
not a problem). The watch rule uses the diagnosis's own thresholds (histograms every ≤ 50 steps on a
model over 10M parameters), so a script the audit passes is one the incident report would not blame.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from incidents.diagnosis.overhead import FREQUENT_STEPS, LARGE_MODEL
from incidents.tools.audit.cost import Calibration, predict
from incidents.tools.audit.models import ModelSize
from incidents.tools.audit.script import ScriptFacts, Site, WatchCall

SEVERITIES = ("info", "warn", "error")
#: Predicted watch cost per step above which a frequent watch is an error whatever the model size.
COSTLY_STEP_S = 0.05
FIX_CALL = 'log="gradients", log_freq=100'


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

    def to_dict(self, script: str) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "location": f"{script}:{self.line}",
                "line": self.line, "message": self.message, "evidence": self.evidence,
                "prediction": self.prediction, "fix": self.fix, "diff": self.diff}


def diff(facts: ScriptFacts, start: int, end: int, new_lines: list[str]) -> str:
    """A unified diff of the whole script with lines ``start..end`` replaced by ``new_lines``."""
    old = facts.lines
    new = old[: start - 1] + new_lines + old[end:]
    name = facts.path.name
    return "".join(line if line.endswith("\n") else line + "\n"
                   for line in difflib.unified_diff(old, new, f"a/{name}", f"b/{name}", n=1, lineterm=""))


def _replace(facts: ScriptFacts, site: Site | WatchCall, new_text: str) -> str:
    block = "\n".join(facts.lines[site.line - 1: site.end_line])
    if site.source not in block:
        return ""
    return diff(facts, site.line, site.end_line, block.replace(site.source, new_text, 1).split("\n"))


def watch_findings(facts: ScriptFacts, model: ModelSize | None, calibration: Calibration,
                   run_steps: int) -> list[AuditFinding]:
    out = []
    for call in facts.watches:
        out.append(_watch(facts, call, model, calibration, run_steps))
    return out


def _watch(facts: ScriptFacts, call: WatchCall, model: ModelSize | None, calibration: Calibration,
           run_steps: int) -> AuditFinding:
    fixed = f"{call.source.split('(', 1)[0]}({call.model or 'model'}, {FIX_CALL})"
    fix_text = ("log gradients every 100 steps (or use incidents.tools.fastwatch.watch for every tensor at a "
                "fraction of the cost)")
    evidence: dict[str, Any] = {"call": call.source,
                                "log": call.log.value if call.log else None, "log_via": call.log.via if call.log else None,
                                "log_freq": call.log_freq.value if call.log_freq else None,
                                "log_freq_via": call.log_freq.via if call.log_freq else None}
    if call.log is None or call.log_freq is None or call.log.value not in ("gradients", "parameters", "all") \
            or not isinstance(call.log_freq.value, int) or call.log_freq.value < 1:
        return AuditFinding("wandb_watch", "warn", call.line,
                            "wandb.watch's log/log_freq could not be traced to a value; check them before a long run",
                            evidence, None, fix_text, _replace(facts, call, fixed))
    log, freq = call.log.value, call.log_freq.value
    if model is not None:
        evidence["model"] = {"name": model.name, "parameters": model.parameters, "tensors": model.tensors,
                             "source": model.source}
    device = "cuda" if facts.uses_cuda else "cpu"
    prediction = None
    if model is not None:
        p = predict(calibration, log, freq, model.parameters, model.tensors, device, run_steps)
        prediction = {**p.to_dict(), "calibration": calibration.origin}
        if p.device != device:
            prediction["note"] = f"the script trains on {device}; the calibration has no {device} figures"
    label = f'wandb.watch(log="{log}", log_freq={freq})'
    if freq > FREQUENT_STEPS:
        return AuditFinding("wandb_watch", "info", call.line,
                            f"{label}: histograms every {freq} steps, too rarely to matter", evidence, prediction)
    if model is None:
        return AuditFinding("wandb_watch", "warn", call.line,
                            f"{label} logs histograms of every tensor every {freq} step(s); the model's size is "
                            "unknown, so the cost cannot be predicted (pass --params)", evidence, None, fix_text,
                            _replace(facts, call, fixed))
    costly = model.parameters > LARGE_MODEL or prediction["per_step_s"] >= COSTLY_STEP_S
    message = (f"{label} on {model.name} ({model.parameters / 1e6:.1f}M parameters, {model.tensors or '?'} tensors): "
               f"predicted +{prediction['per_step_s']:.3g} s per step, "
               f"+{prediction['run_s'] / 3600:.2f} h over {run_steps:,} steps")
    return AuditFinding("wandb_watch", "error" if costly else "warn", call.line, message, evidence, prediction,
                        fix_text, _replace(facts, call, fixed))


def profiler_findings(facts: ScriptFacts) -> list[AuditFinding]:
    out = []
    for site in facts.profilers:
        if site.detail == "scheduled":
            continue
        new = re.sub(r"profile\(", "profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1), ",
                     site.source, count=1).replace(", )", ")")
        out.append(AuditFinding("profiler_on", "warn", site.line,
                                "torch.profiler records every step of the run (no schedule)", {"call": site.source},
                                None, "profile a few steps with a schedule (and call prof.step() each step), or "
                                      "remove the profiler for production runs", _replace(facts, site, new)))
    return out


def loader_findings(facts: ScriptFacts) -> list[AuditFinding]:
    out = []
    extra = "num_workers=4, pin_memory=True" if facts.uses_cuda else "num_workers=4"
    for site in facts.loaders:
        if site.detail:
            new = re.sub(r"num_workers\s*=\s*0", extra, site.source, count=1)
        else:
            new = site.source[:-1].rstrip().rstrip(",") + f", {extra})"
        out.append(AuditFinding("dataloader_workers", "warn", site.line,
                                "DataLoader loads batches in the training process (no workers): the step waits on it",
                                {"call": site.source}, None, "load in worker processes", _replace(facts, site, new)))
    return out


def device_findings(facts: ScriptFacts) -> list[AuditFinding]:
    if not facts.uses_cuda or not facts.model_names:
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
        out.append(AuditFinding("sync_in_step", "warn", site.line,
                                "torch.cuda.synchronize() in the step loop stalls the GPU queue every step",
                                {"call": site.source}, None, "remove it (time steps with CUDA events if needed)",
                                diff(facts, site.line, site.line, []) if removable else ""))
    severity = "warn" if facts.uses_cuda else "info"
    for site in facts.items:
        line = facts.lines[site.line - 1]
        accumulates = "+=" in line and site.source.endswith(".item()")
        new = site.source[: -len(".item()")] + ".detach()" if accumulates else site.source
        out.append(AuditFinding("item_in_step", severity, site.line,
                                f"{site.source} in the step loop copies to the host every step"
                                + (" (a GPU sync)" if facts.uses_cuda else " (cheap on a CPU run)"),
                                {"call": site.source}, None,
                                "keep the running value as a tensor and call .item() only when you log it",
                                _replace(facts, site, new) if accumulates else ""))
    return out
