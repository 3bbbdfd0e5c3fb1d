"""What a report is built from, as plain data: no database rows, no files.

The service turns stored rows into a ``ReportInput``; the CLI can build one straight from files.
Keeping the report a function of this value makes it testable and makes its cache key honest: the
key is a hash of exactly these inputs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from incidents.evidence.wandb.evidence import RunEvidence


@dataclass(frozen=True)
class RunInput:
    role: str                 # incident | baseline | fixed
    #: Empty in inputs made for a cache key only (``report_input(with_runs=False)``): ``ref`` names the run.
    run: RunEvidence
    #: A stable identity of the parsed evidence (stored id + content hash), for the cache key.
    ref: str = ""


@dataclass(frozen=True)
class ProfileInput:
    name: str                 # the file name, cited as the source of every figure taken from it
    document: dict[str, Any]  # our profile.json, or an ``inspect_profile`` result
    ref: str = ""


@dataclass(frozen=True)
class EntryInput:
    id: int
    phase: str
    local_date: dt.date
    duration_s: int
    description: str = ""
    project: str = ""
    task: str = ""
    start_at: dt.datetime | None = None
    end_at: dt.datetime | None = None


@dataclass(frozen=True)
class ActionInput:
    text: str
    owner: str = ""
    due: dt.date | None = None
    kind: str = "prevent"


@dataclass(frozen=True)
class EventInput:
    key: str
    at: dt.datetime | None
    text: str
    manual: bool = False
    hidden: bool = False


@dataclass(frozen=True)
class ReportInput:
    title: str
    slug: str = ""
    status: str = "draft"
    author: str = ""
    environment: str = ""
    sections: dict[str, str] = field(default_factory=dict)
    fix_before: str = ""
    fix_after: str = ""
    #: The consultant's edited log entry; empty means "generate it from the evidence".
    log_entry: str = ""
    runs: tuple[RunInput, ...] = ()
    profiles: tuple[ProfileInput, ...] = ()
    entries: tuple[EntryInput, ...] = ()
    actions: tuple[ActionInput, ...] = ()
    events: tuple[EventInput, ...] = ()
    created: dt.datetime | None = None
    #: The postmortem's human parts: severity (SEV1–SEV4 or ""), status ("" = derived), the
    #: milestones set by hand (name → time; the others are found in the evidence), and the price of
    #: a GPU-hour with its currency (``None``: no cost is stated).
    severity: str = ""
    incident_status: str = ""
    milestones: dict[str, dt.datetime] = field(default_factory=dict)
    gpu_hour_price: Decimal | None = None
    currency: str = "USD"

    def run(self, role: str) -> RunEvidence | None:
        return next((r.run for r in self.runs if r.role == role), None)

    @property
    def profile(self) -> ProfileInput | None:
        """The profile used for diagnosis: our profile.json first (it has per-mode figures)."""
        ours = [p for p in self.profiles if p.document.get("modes")]
        return next(iter(ours or self.profiles), None)
