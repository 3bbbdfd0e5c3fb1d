"""The result every diagnosis rule returns, fired or not, so a report can show what was checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: ``class`` values: a defect to fix, a modelling question, or nothing wrong found.
CLASSES = ("engineering", "research", "healthy")

RULE_TITLES = {"watch_overhead": "Watch overhead", "model_not_on_gpu": "Model not on the GPU",
               "input_bound": "Input-bound", "gpu_underused": "GPU under-used",
               "exploding_gradients": "Exploding gradients", "vanishing_gradients": "Vanishing gradients",
               "dead_layer": "Dead layer", "static_parameters": "Static parameters",
               "clean_but_stuck": "Clean but stuck"}


@dataclass(frozen=True)
class Finding:
    """One rule's outcome. ``evidence`` is JSON-ready: tensors, steps, numbers and their sources."""

    rule: str
    fired: bool
    cls: str
    verdict: str
    evidence: dict[str, Any] = field(default_factory=dict)
    confidence: float = 0.0

    @property
    def title(self) -> str:
        """The rule's name as a heading, acronyms kept ("GPU under-used", not "Gpu underused")."""
        return RULE_TITLES.get(self.rule, self.rule.replace("_", " ").capitalize())

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape (``class`` is a keyword in Python, hence ``cls`` here)."""
        return {"rule": self.rule, "fired": self.fired, "class": self.cls, "verdict": self.verdict,
                "evidence": self.evidence, "confidence": round(float(self.confidence), 2)}


def not_fired(rule: str, verdict: str, **evidence: Any) -> Finding:
    """A rule that was checked and found nothing (or could not be checked, said in ``verdict``)."""
    return Finding(rule, False, "healthy", verdict, dict(evidence), 0.0)
