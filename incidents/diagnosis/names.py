"""What a metric's name says: its words, and whether it is measured on held-out data.

Shared by the rules that pick a training loss (``signals``) and those that read held-out metrics
(``quality``, ``overfitting``), so both read names the same way.
"""

from __future__ import annotations

import re

HELD_OUT = frozenset({"val", "valid", "validation", "test", "eval", "evaluation", "dev", "holdout", "heldout"})


def metric_words(name: str) -> list[str]:
    """``val/DiceScore`` → ``["val", "dice", "score"]``; digits kept on their word (``f1``, ``rouge1``)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1_\2", str(name))
    return [t.lower() for t in re.split(r"[^A-Za-z0-9]+", spaced) if t]


def has_word(words: list[str], vocabulary: frozenset[str]) -> bool:
    return any(w in vocabulary or w.rstrip("0123456789") in vocabulary for w in words)


def held_out(name: str) -> bool:
    return has_word(metric_words(name), HELD_OUT)
