"""Pre-flight audit of a training script: what will make its steps slow, before it runs.

``audit_script`` reads the script's syntax tree (never imports or runs it; ``source`` refuses hostile
input), resolves names as Python would within the file (``scopes``, ``resolve``), recognises the
calls that matter by qualified name (``calls``, ``sizes``), judges them (``script_rules``, ``watch_rule``)
and predicts each watch call's cost per step from a calibration of this machine (``hourtab repro
--calibrate``) or the shipped one, which says where it was measured (``cost``, ``checks``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from incidents.tools.audit import script_rules
from incidents.tools.audit.cost import Calibration, load_calibration
from incidents.tools.audit.models import ModelSize
from incidents.tools.audit.script import ScriptUnreadable, read_script
from incidents.tools.audit.source import MAX_BYTES

__all__ = ["MAX_BYTES", "SCHEMA", "SEVERITIES", "ScriptUnreadable", "audit_script", "render_text"]
SEVERITIES = script_rules.SEVERITIES

SCHEMA = "hourtab.audit/1"
DEFAULT_RUN_STEPS = 11_250


def audit_script(path: Path, params: int | None = None, tensors: int | None = None,
                 run_steps: int = DEFAULT_RUN_STEPS, calibration: Calibration | None = None,
                 fail_on: str = "error", max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """Every finding for the script at ``path``, worst first, as a JSON-ready document; ``failed`` when
    one is at or above ``fail_on``."""
    facts = read_script(path, max_bytes)
    calibration = calibration or load_calibration()
    model = facts.model
    if params is not None:
        model = ModelSize("model", params, tensors if tensors is not None else (model.tensors if model else None),
                          "--params" + (" and --tensors" if tensors is not None else ""))
        facts.watches = [dataclasses.replace(w, size=None) for w in facts.watches]
    findings = (script_rules.watch_findings(facts, model, calibration, run_steps)
                + script_rules.profiler_findings(facts) + script_rules.loader_findings(facts)
                + script_rules.device_findings(facts) + script_rules.loop_findings(facts))
    findings.sort(key=lambda f: (-SEVERITIES.index(f.severity), f.line))
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    return {
        "schema": SCHEMA, "script": path.name, "run_steps": run_steps,
        "model": {"name": model.name, "parameters": model.parameters, "tensors": model.tensors,
                  "source": model.source} if model else None,
        "calibration": calibration.origin, "counts": counts,
        "flagged": counts["warn"] + counts["error"] > 0,
        "fail_on": fail_on,
        "failed": any(SEVERITIES.index(f.severity) >= SEVERITIES.index(fail_on) for f in findings),
        "findings": [f.to_dict(path.name) for f in findings],
    }


def render_text(report: dict[str, Any]) -> str:
    """The report as a terminal reads it: one block per finding, its fix as a diff."""
    counts = report["counts"]
    lines = [f"{report['script']}: {len(report['findings'])} finding(s) "
             f"({counts['error']} error, {counts['warn']} warn, {counts['info']} info)"]
    model = report["model"]
    lines.append(f"  model: {model['name']}, {model['parameters'] / 1e6:.1f}M parameters, "
                 f"{model['tensors'] or 'unknown'} tensors ({model['source']})" if model
                 else "  model: not recognised (pass --params N [--tensors T])")
    lines.append(f"  calibration: {report['calibration']}")
    for f in report["findings"]:
        lines.append("")
        lines.append(f"{f['severity'].upper():<5} {f['location']}  {f['message']}")
        evidence = f["evidence"]
        if evidence.get("log_freq_via") and evidence["log_freq_via"] != "literal":
            lines.append(f"      log_freq from {evidence['log_freq_via']}; log from {evidence['log_via']}")
        if isinstance(evidence.get("model"), dict):
            lines.append(f"      model size: {evidence['model']['source']}")
        p = f["prediction"] or f["prediction_range"]
        if p and p.get("range"):
            lines.append(f"      predicted: {p['min_per_step_s']:.3g}–{p['max_per_step_s']:.3g} s per step on "
                         f"{p['device']} (log {p['min_at']['log']}, log_freq {p['min_at']['log_freq']} to log "
                         f"{p['max_at']['log']}, log_freq {p['max_at']['log_freq']})")
        elif p:
            lines.append(f"      predicted: {p['per_logging_step_s']:.3g} s per logging step on {p['device']}, "
                         f"{p['per_step_s']:.3g} s per step, {p['run_s'] / 3600:.2f} h over {p['run_steps']:,} steps")
        elif evidence.get("prediction_unavailable"):
            lines.append(f"      {evidence['prediction_unavailable']}")
        if f["fix"]:
            lines.append(f"      fix: {f['fix']}")
        lines += ["      " + d for d in f["diff"].splitlines()]
    return "\n".join(lines)
