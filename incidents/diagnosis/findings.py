"""The result every diagnosis rule returns, fired or not, so a report can show what was checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: ``class`` values: a defect to fix, a modelling question, nothing wrong found, or a symptom whose cause
#: the evidence cannot decide (an ``undetermined`` finding is not fired: it names no cause, and its
#: ``evidence["would_decide"]`` lists what would decide it).
CLASSES = ("engineering", "research", "healthy", "undetermined")

RULE_TITLES = {"crash": "Crash", "overfitting": "Overfitting", "watch_overhead": "Watch overhead", "model_not_on_gpu": "Model not on the GPU",
               "input_bound": "Input-bound", "gpu_underused": "GPU under-used",
               "exploding_gradients": "Exploding gradients", "vanishing_gradients": "Vanishing gradients",
               "dead_layer": "Dead layer", "static_parameters": "Static parameters",
               "quality_collapse": "Quality collapse", "clean_but_stuck": "Clean but stuck"}


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

    @property
    def undetermined(self) -> bool:
        return self.cls == "undetermined"

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape (``class`` is a keyword in Python, hence ``cls`` here)."""
        return {"rule": self.rule, "fired": self.fired, "class": self.cls, "verdict": self.verdict,
                "evidence": self.evidence, "confidence": round(float(self.confidence), 2)}


def not_fired(rule: str, verdict: str, **evidence: Any) -> Finding:
    """A rule that was checked and found nothing (or could not be checked, said in ``verdict``)."""
    return Finding(rule, False, "healthy", verdict, dict(evidence), 0.0)


def undetermined(rule: str, verdict: str, would_decide: list[str], used: list[str], **evidence: Any) -> Finding:
    """A symptom seen whose cause the evidence cannot decide: says so, what it read, and what would decide."""
    return Finding(rule, False, "undetermined", verdict,
                   {**evidence, "evidence_used": used, "would_decide": would_decide}, 0.0)
