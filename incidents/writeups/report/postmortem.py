"""The postmortem header: severity, status, the four milestones, how long each stage took, and cost.

Milestones are what a postmortem reader looks for first (the Google SRE template's timeline,
PagerDuty's and FireHydrant's milestone exports). The consultant may set each one; one not set is
found in the evidence, and says where from:

- *began*: the incident run's start;
- *detected*: the first time entry on the incident (when the consultant was called in);
- *diagnosed*: the end of the baseline run (the null-hypothesis test), else the date of the profile's
  run without watch, else the end of the last investigation entry;
- *resolved*: the end of the fixed run, else of the last validation entry, else of the last fix entry.

A found milestone must not come before the one it follows (a baseline run made before anyone was
called in did not diagnose anything yet): the next candidate is taken. The cost is the KPI's
GPU-hours lost at the consultant's price per GPU-hour; a CPU run has no GPU-hours to price.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from incidents.writeups.report import figures as fmt
from incidents.writeups.report.figures import Figure, missing
from incidents.writeups.report.inputs import EntryInput, ReportInput

MILESTONES = ("began", "detected", "diagnosed", "resolved")
#: (label, from, to): the stages a reader times.
STAGES = (("Time to detect", "began", "detected"), ("Time to diagnose", "detected", "diagnosed"),
          ("Time to resolve", "began", "resolved"))
SET_BY_HAND = "set by the consultant"


@dataclass(frozen=True)
class Milestone:
    name: str
    at: dt.datetime | None
    figure: Figure
    #: The timeline event it is (``run:<id>:end``, ``entry:<id>``), so the timeline can mark it.
    event_key: str = ""


@dataclass(frozen=True)
class Postmortem:
    severity: str
    status: Figure
    milestones: list[Milestone]
    stages: list[tuple[str, Figure]]
    cost: Figure

    def milestone(self, name: str) -> Milestone:
        return next(m for m in self.milestones if m.name == name)

    @property
    def figures(self) -> list[Figure]:
        return [self.status, *(m.figure for m in self.milestones), *(f for _, f in self.stages), self.cost]

    @property
    def marks(self) -> dict[str, str]:
        """Timeline event key → the milestone it is."""
        return {m.event_key: m.name for m in self.milestones if m.event_key}


def _utc(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return None


def _entry_start(e: EntryInput) -> dt.datetime:
    return _utc(e.start_at) or dt.datetime.combine(e.local_date, dt.time(), dt.UTC)


def _entry_end(e: EntryInput) -> dt.datetime:
    return _utc(e.end_at) or _entry_start(e) + dt.timedelta(seconds=e.duration_s)


Candidate = tuple[dt.datetime | None, str, str]      # (time, source, timeline event key)


def _run_time(inputs: ReportInput, role: str, edge: str) -> Iterator[Candidate]:
    run = inputs.run(role)
    if run is not None:
        at = _utc(getattr(run, f"{edge}_at", None))
        verb = "started" if edge == "started" else "ended"
        yield at, f"{role} run {fmt.run_label(run)} {verb}", f"run:{run.run_id}:{'start' if verb == 'started' else 'end'}"


def _entries(inputs: ReportInput, phases: tuple[str, ...], last: bool) -> Iterator[Candidate]:
    chosen = [e for e in inputs.entries if e.phase in phases]
    if chosen:
        entry = max(chosen, key=_entry_end) if last else min(chosen, key=_entry_start)
        at = _entry_end(entry) if last else _entry_start(entry)
        edge = "ended" if last else "started"
        yield at, f"time entry {entry.id} ({entry.phase}) {edge}", "" if last else f"entry:{entry.id}"


def _profile_baseline(inputs: ReportInput) -> Iterator[Candidate]:
    """The profile's run without watch, dated by its W&B run folder's name."""
    profile = inputs.profile
    if profile is None:
        return
    for mode in profile.document.get("modes") or []:
        folder = str(((mode or {}).get("wandb_run") or {}).get("dir") or "") if isinstance(mode, dict) else ""
        match = re.search(r"run-(\d{8})_(\d{6})", folder)
        if mode.get("kind") == "baseline" and match:
            at = dt.datetime.strptime("".join(match.groups()), "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC)
            yield at, f"{profile.name} · mode baseline wandb_run (its run folder's time)", ""


def _candidates(inputs: ReportInput, name: str) -> Iterator[Candidate]:
    if name == "began":
        yield from _run_time(inputs, "incident", "started")
    elif name == "detected":
        yield from _entries(inputs, ("investigation",), last=False)
        yield from _entries(inputs, tuple({e.phase for e in inputs.entries}), last=False)
    elif name == "diagnosed":
        baseline = inputs.run("baseline")
        if baseline is not None and not len(baseline.histograms):
            yield from _run_time(inputs, "baseline", "ended")
        yield from _profile_baseline(inputs)
        yield from _entries(inputs, ("investigation",), last=True)
    else:
        yield from _run_time(inputs, "fixed", "ended")
        yield from _entries(inputs, ("validation",), last=True)
        yield from _entries(inputs, ("fix",), last=True)


def milestones(inputs: ReportInput) -> list[Milestone]:
    found: list[Milestone] = []
    for name in MILESTONES:
        floor = found[-1].at if found else None
        chosen: Candidate = (None, "", "")
        manual = _utc(inputs.milestones.get(name))
        if manual is not None:
            chosen = (manual, SET_BY_HAND, "")
        else:
            chosen = next(((at, src, key) for at, src, key in _candidates(inputs, name)
                           if at is not None and (floor is None or at >= floor)), chosen)
        at, source, key = chosen
        figure = Figure(f"{at:%Y-%m-%d %H:%M} UTC", f"{name}: {source}", at.timestamp()) if at else \
            missing("not recorded")
        found.append(Milestone(name, at, figure, key))
    return found


def _stages(found: list[Milestone]) -> list[tuple[str, Figure]]:
    at = {m.name: m for m in found}
    out = []
    for label, start, end in STAGES:
        a, b = at[start], at[end]
        if a.at is None or b.at is None:
            out.append((label, missing(f"needs the {start} and {end} milestones")))
            continue
        seconds = (b.at - a.at).total_seconds()
        out.append((label, Figure(fmt.duration(seconds), f"{label.lower()}: {end} − {start}", seconds)))
    return out


def _status(inputs: ReportInput, found: list[Milestone]) -> Figure:
    # A status is a word: its value 0.0 only marks it present (a ``None`` value reads as missing).
    if inputs.incident_status:
        return Figure(inputs.incident_status, "", 0.0)
    at = {m.name: m.at for m in found}
    status = "resolved" if at["resolved"] else "identified" if at["diagnosed"] else "investigating"
    return Figure(status, f"status: derived from the milestones found; it may be {SET_BY_HAND}", 0.0)


def _cost(inputs: ReportInput, lost: Any) -> Figure:
    if inputs.gpu_hour_price is None:
        return missing("no price per GPU-hour set")
    if lost is None or lost.before.missing:
        return missing(f"not computed: GPU-hours lost {lost.before.text if lost is not None else 'unknown'}")
    if not lost.label.startswith("GPU-hours"):
        return missing("not computed: a CPU run has no GPU-hours to price")
    price = float(inputs.gpu_hour_price)
    cost = lost.before.value * price
    currency = inputs.currency or "USD"
    return Figure(f"{currency} {cost:,.2f}", f"cost: {lost.before.text} GPU-hours lost × {currency} {price:,.2f} "
                                             f"per GPU-hour ({SET_BY_HAND}); {lost.before.source}", cost)


def postmortem(inputs: ReportInput, lost: Any) -> Postmortem:
    """``lost`` is the KPI strip's hours-lost figure: the cost prices that very figure."""
    found = milestones(inputs)
    return Postmortem(inputs.severity, _status(inputs, found), found, _stages(found), _cost(inputs, lost))
