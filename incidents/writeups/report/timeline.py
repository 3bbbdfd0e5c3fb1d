"""The incident timeline: run starts and ends, profiler captures, time entries and manual events.

Automatic events get stable keys (``run:<id>:start``, ``entry:<id>``…) so a consultant can hide one
and the choice survives a rebuild; manual events carry their own keys.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from incidents.writeups.report import figures as fmt
from incidents.writeups.report.inputs import ReportInput
from incidents.writeups.report.quantities import wall_time


@dataclass(frozen=True)
class Event:
    key: str
    at: dt.datetime | None
    text: str
    source: str
    hidden: bool = False
    manual: bool = False


def _parse(value: object) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, str) and value:
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return None


def automatic(inputs: ReportInput) -> list[Event]:
    events: list[Event] = []
    for ref in inputs.runs:
        run = ref.run
        label = f"{ref.role} run {getattr(run, 'name', '') or run.run_id}"
        if run.started_at:
            events.append(Event(f"run:{run.run_id}:start", _parse(run.started_at), f"{label} started",
                                f"run {fmt.run_label(run)}"))
        if run.ended_at:
            events.append(Event(f"run:{run.run_id}:end", _parse(run.ended_at),
                                f"{label} {'finished' if run.state == 'finished' else 'ended (' + run.state + ')'}"
                                f" after {wall_time(run).text} (wall time)", f"run {fmt.run_label(run)}"))
    for profile in inputs.profiles:
        at = _parse(profile.document.get("created_at"))
        modes = ", ".join(m.get("mode", "?") for m in profile.document.get("modes") or [])
        text = f"Profile captured: {profile.name}" + (f" ({modes})" if modes else "")
        events.append(Event(f"profile:{profile.name}", at, text, profile.name))
    for entry in inputs.entries:
        at = entry.start_at or dt.datetime.combine(entry.local_date, dt.time(), dt.UTC)
        text = f"{entry.phase.capitalize()}: {entry.description or entry.task or 'time entry'} " \
               f"({fmt.hours(entry.duration_s)} h)"
        events.append(Event(f"entry:{entry.id}", at, text, f"time entry {entry.id}"))
    return events


def merged(inputs: ReportInput, include_hidden: bool = False) -> list[Event]:
    """All events in time order (undated last); hidden ones only when asked (the editor shows them)."""
    hidden = {e.key for e in inputs.events if e.hidden and not e.manual}
    events = [Event(e.key, e.at, e.text, e.source, e.key in hidden) for e in automatic(inputs)]
    events += [Event(e.key, e.at, e.text, "added by the consultant", e.hidden, True)
               for e in inputs.events if e.manual]
    if not include_hidden:
        events = [e for e in events if not e.hidden]
    far = dt.datetime.max.replace(tzinfo=dt.UTC)
    return sorted(events, key=lambda e: (e.at or far, e.key))
