"""What to tell the consultant before publishing: empty sections, and a title the numbers contradict."""

from __future__ import annotations

import re
from typing import Any

#: "3.5x slower", "8× slowdown", "2.1x faster": a ratio a title claims.
TITLE_RATIO = re.compile(r"(\d+(?:\.\d+)?)\s*[x×]\b", re.IGNORECASE)
#: How far a title's ratio may stray from the measured one before we say so.
TOLERANCE = 0.25


def publish_warnings(report: Any) -> list[str]:
    """One line per problem; an empty list means nothing to warn about."""
    inputs = report.inputs
    warnings = []
    empty = [title for key, title, html, _ in report.sections if not html]
    if not (inputs.fix_before or inputs.fix_after):
        empty.append("Fix diff")
    if not inputs.actions:
        empty.append("Action items")
    if empty:
        warnings.append("Empty sections (left out of the published writeup): " + ", ".join(empty) + ".")
    measured = report.comparison.slowdown
    for match in TITLE_RATIO.finditer(inputs.title):
        claimed = float(match.group(1))
        if measured.missing:
            warnings.append(f"The title says {match.group(0)}, but no slowdown was measured "
                            f"({measured.text}).")
        elif abs(claimed - measured.value) > TOLERANCE * measured.value:
            warnings.append(f"The title says {match.group(0)}, but the measured slowdown is {measured.text}.")
    return warnings
