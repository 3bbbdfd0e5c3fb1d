"""Engagement hours by phase, from the time entries attached to the incident (0.1 h precision)."""

from __future__ import annotations

from dataclasses import dataclass

from incidents.writeups.models import PHASES
from incidents.writeups.report.figures import lower_first
from incidents.writeups.report.inputs import EntryInput, ReportInput

#: Past-tense verbs for the standard phases; other phases read "Worked on <phase>".
VERBS = {"investigation": "Investigated", "fix": "Fixed", "validation": "Validated"}


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: int
    entries: tuple[EntryInput, ...]

    @property
    def hours(self) -> float:
        return round(self.seconds / 3600, 1)

    @property
    def items(self) -> list[str]:
        """Distinct descriptions in first-seen order: the sub-items of the phase."""
        seen: list[str] = []
        for e in self.entries:
            text = (e.description or e.task or "").strip()
            if text and text not in seen:
                seen.append(text)
        return seen

    @property
    def line(self) -> str:
        """``Investigated: profiled the watch hooks; compared with baseline — 1.5 h``."""
        verb = VERBS.get(self.name, f"Worked on {self.name}")
        detail = "; ".join(_without_verb(lower_first(i.strip().rstrip(".")), verb) for i in self.items[:4])
        return f"{verb}{': ' + detail if detail else ''} — {self.hours:.1f} h"


def _without_verb(item: str, verb: str) -> str:
    """"Validated: validated the fix" → "Validated: the fix" (no doubled word after the separator)."""
    first, _, rest = item.partition(" ")
    return rest if first.lower() == verb.lower() and rest else item


def phases(inputs: ReportInput) -> list[Phase]:
    order = {name: i for i, name in enumerate(PHASES)}
    groups: dict[str, list[EntryInput]] = {}
    for entry in sorted(inputs.entries, key=lambda e: (e.start_at is None, e.start_at or 0, e.local_date, e.id)):
        groups.setdefault(entry.phase or "investigation", []).append(entry)
    result = [Phase(name, sum(e.duration_s for e in items), tuple(items)) for name, items in groups.items()]
    return sorted(result, key=lambda p: (order.get(p.name, len(order)), p.name))


def total_seconds(inputs: ReportInput) -> int:
    return sum(e.duration_s for e in inputs.entries)
