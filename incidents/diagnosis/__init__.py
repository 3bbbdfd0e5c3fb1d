"""Automatic diagnosis of a training run: pure functions over RunEvidence-shaped data.

``diagnose`` runs every rule and returns every outcome, fired or not, so a report can say what was
checked. Engineering rules (speed and gradient health) run first; the research-question rule only
fires when none of them did, as in the two-class method.
"""

from __future__ import annotations

from typing import Any

from incidents.diagnosis import gradients, overhead, progress
from incidents.diagnosis.findings import CLASSES, Finding
from incidents.diagnosis.subject import Subject, prepare

__all__ = ["CLASSES", "RULES", "Finding", "Subject", "diagnose", "prepare"]

#: Every rule name, in report order.
RULES = ("watch_overhead", "input_bound", "exploding_gradients", "vanishing_gradients", "dead_layer",
         "static_parameters", "clean_but_stuck")

#: Rules about correctness of training: when one fires, "stuck" is not a research question.
_GRADIENT_RULES = (gradients.exploding, gradients.vanishing, gradients.dead_layer, gradients.static_parameters)


def diagnose(run: Any, baseline: Any | None = None, profile: dict[str, Any] | None = None,
             profile_source: str = "profile") -> list[Finding]:
    """Run every rule on ``run`` (a RunEvidence), optionally against a baseline run and a profile."""
    subject = prepare(run, baseline, profile, profile_source)
    findings = [overhead.watch_overhead(subject), overhead.input_bound(subject)]
    health = [rule(subject) for rule in _GRADIENT_RULES]
    findings += health
    findings.append(progress.clean_but_stuck(subject, [f.rule for f in health if f.fired]))
    return findings
