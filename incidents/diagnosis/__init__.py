"""Automatic diagnosis of a training run: pure functions over RunEvidence-shaped data.

``diagnose`` runs every rule and returns every outcome, fired or not, so a report can say what was
checked. How the run ended comes first (a crash names its exception, line and cause; an
interrupted run is judged on the steps it logged); engineering rules (speed, gradient health, a
collapsed quality metric) next; overfitting is a modelling finding beside them; the progress rule
only fires when no engineering rule did, as in the two-class method. A rule whose
symptom is seen but whose cause the evidence cannot decide returns an ``undetermined`` finding
(class ``undetermined``, not fired) with ``evidence["would_decide"]``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from incidents.diagnosis import crash, gpu, gradients, loss_progress, overfitting, overhead, quality
from incidents.diagnosis.findings import CLASSES, Finding
from incidents.diagnosis.subject import Subject, prepare
from incidents.evidence.wandb.evidence import RunEvidence

__all__ = ["CLASSES", "RULES", "Finding", "Subject", "diagnose", "diagnose_subject", "prepare"]

#: Every rule name, in report order.
RULES = ("crash", "watch_overhead", "model_not_on_gpu", "input_bound", "gpu_underused", "exploding_gradients",
         "vanishing_gradients", "dead_layer", "static_parameters", "quality_collapse", "overfitting", "clean_but_stuck")

#: Rules about correctness of training: when one fires, "stuck" is not a research question.
_GRADIENT_RULES = (gradients.exploding, gradients.vanishing, gradients.dead_layer, gradients.static_parameters)


def diagnose(run: RunEvidence, baseline: RunEvidence | None = None, profile: dict[str, Any] | None = None,
             profile_source: str = "profile") -> list[Finding]:
    """Run every rule on ``run``, optionally against a baseline run and a profile."""
    return diagnose_subject(prepare(run, baseline, profile, profile_source))


def diagnose_subject(subject: Subject) -> list[Finding]:
    """Run every rule on a prepared subject (a report that also reads the subject prepares it once)."""
    findings = [crash.crash(subject), overhead.watch_overhead(subject), gpu.model_not_on_gpu(subject),
                gpu.input_bound(subject), gpu.gpu_underused(subject)]
    health = [rule(subject) for rule in _GRADIENT_RULES] + [quality.quality_collapse(subject)]
    findings += health + [overfitting.overfitting(subject)]
    findings.append(loss_progress.clean_but_stuck(subject, [f.rule for f in health if f.fired]))
    return [_with_evidence_used(f) for f in findings]


def _with_evidence_used(finding: Finding) -> Finding:
    """Every fired rule names the evidence it used (its ``*source`` fields when it did not list them)."""
    if not finding.fired or finding.evidence.get("evidence_used"):
        return finding
    used = [str(v) for k, v in finding.evidence.items() if k.endswith("source") and v and isinstance(v, str)]
    return replace(finding, evidence={**finding.evidence, "evidence_used": used or ["the run's watch histograms"]})
