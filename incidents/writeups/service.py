"""Incidents as stored objects: build from files, attach evidence, edit, publish (the time entries
an incident bills: ``billed_entries``).

Services take the session first and never commit (callers wrap them in ``transaction``). Runs go
through the evidence store (parsed once, Parquet in blob storage); profiles are kept as JSON on the
link row. ``report_input`` turns the stored rows into the plain value the report is built from.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.blobs import BlobStore
from hourtab.core.db import utcnow
from hourtab.core.scoping import get_owned, select_owned
from hourtab.core.values import TooDeep, check_date, json_loads, xml_safe
from hourtab.retainers.assign import bump_page_version
from hourtab.retainers.models import Retainer
from hourtab.timesheets.models import TimeEntry
from incidents.errors import EvidenceNotFound, InvalidEvidence
from incidents.evidence import store
from incidents.evidence.models import Evidence
from incidents.evidence.profiler import inspect_profile
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.writeups.billed_entries import assign_tagged
from incidents.writeups.document import Kind, writeup_document
from incidents.writeups.errors import InvalidIncident
from incidents.writeups.models import (
    ACTION_KINDS,
    MILESTONES,
    SECTIONS,
    ActionItem,
    Incident,
    IncidentEvidence,
    TimelineEvent,
)
from incidents.writeups.report.build import Report, build_incident_report
from incidents.writeups.report.inputs import (
    ActionInput,
    EntryInput,
    EventInput,
    ProfileInput,
    ReportInput,
    RunInput,
)

RUN_ROLES = ("incident", "baseline", "fixed")


def _slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:80] or "incident"


def _unique_slug(session: Session, account_id: int, title: str) -> str:
    base = _slugify(title)
    slug = base
    while session.scalar(select(Incident.id).where(Incident.account_id == account_id, Incident.slug == slug)):
        slug = f"{base}-{secrets.token_hex(3)}"
    return slug


def create_incident(session: Session, account_id: int, title: str, retainer_id: int | None = None) -> Incident:
    title = xml_safe(title).strip()
    if not title or len(title) > 200:
        raise InvalidIncident("An incident needs a title of 1 to 200 characters.")
    if retainer_id is not None:
        get_owned(session, Retainer, account_id, retainer_id,
                  missing=EvidenceNotFound(f"retainer {retainer_id} not found"))
    incident = Incident(account_id=account_id, title=title, slug=_unique_slug(session, account_id, title),
                        retainer_id=retainer_id, status="draft", sections={})
    session.add(incident)
    session.flush()
    return incident


def get_incident(session: Session, account_id: int, incident_id: int) -> Incident:
    return get_owned(session, Incident, account_id, incident_id,
                     missing=EvidenceNotFound(f"incident {incident_id} not found"))


def list_incidents(session: Session, account_id: int) -> list[Incident]:
    return list(session.scalars(select_owned(Incident, account_id).order_by(Incident.created_at.desc(),
                                                                            Incident.id.desc())))


def ingest_run_path(session: Session, account_id: int, path: Path, blobs: BlobStore) -> Evidence:
    """Store a run folder, ``.wandb`` file or export as evidence (one run per role)."""
    return _ingest_one(session, account_id, path, blobs)[0]


def _ingest_one(session: Session, account_id: int, path: Path, blobs: BlobStore) -> tuple[Evidence, RunEvidence | None]:
    path = Path(path)
    if not path.exists():
        raise InvalidEvidence(f"{path} does not exist")
    rows = store.ingest_path(session, account_id, path, blobs)
    if len(rows) != 1:
        raise InvalidEvidence(f"{path.name} holds {len(rows)} runs; attach one run per role")
    return rows[0]


def read_profile(path: Path) -> tuple[str, dict[str, Any]]:
    """Our profile.json as it is (it has per-mode figures); other captures through ``inspect_profile``."""
    path = Path(path)
    if not path.is_file():
        raise InvalidEvidence(f"{path} is not a file")
    if path.suffix == ".json":
        try:
            document = json_loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            document = None
        except TooDeep as e:
            raise InvalidEvidence(f"{path.name}: {e}; refused.") from e
        if isinstance(document, dict) and document.get("schema") == "hourtab.repro.profile":
            return path.name, document
    return path.name, inspect_profile(path).to_dict()


def attach_run(session: Session, incident: Incident, evidence_id: int, role: str) -> IncidentEvidence:
    if role not in RUN_ROLES:
        raise InvalidIncident(f"Role must be one of {', '.join(RUN_ROLES)}, not {role!r}.")
    store.get_evidence(session, incident.account_id, evidence_id)
    for link in list(incident.evidence):
        if link.role == role or link.evidence_id == evidence_id:
            incident.evidence.remove(link)
    session.flush()
    link = IncidentEvidence(evidence_id=evidence_id, role=role)
    incident.evidence.append(link)
    incident.touch()
    session.flush()
    return link


def attach_profile(session: Session, incident: Incident, name: str, document: dict[str, Any]) -> IncidentEvidence:
    text = json.dumps(document, sort_keys=True, default=str, allow_nan=False)
    link = IncidentEvidence(role="profile", profile_name=xml_safe(name)[:300], profile=json.loads(text),
                            profile_sha256=hashlib.sha256(text.encode()).hexdigest())
    incident.evidence.append(link)
    incident.touch()
    session.flush()
    return link


def detach(session: Session, incident: Incident, link_id: int) -> None:
    for link in list(incident.evidence):
        if link.id == link_id:
            incident.evidence.remove(link)
            incident.touch()
            session.flush()
            return
    raise EvidenceNotFound(f"attachment {link_id} not found")


@dataclass(frozen=True)
class Edits:
    title: str | None = None
    environment: str | None = None
    sections: dict[str, str] | None = None
    fix_before: str | None = None
    fix_after: str | None = None
    log_entry: str | None = None


def update_incident(session: Session, incident: Incident, edits: Edits) -> Incident:
    if edits.title is not None:
        title = xml_safe(edits.title).strip()
        if not title or len(title) > 200:
            raise InvalidIncident("An incident needs a title of 1 to 200 characters.")
        incident.title = title
    if edits.environment is not None:
        incident.environment = xml_safe(edits.environment).strip()[:500]
    if edits.sections is not None:
        unknown = set(edits.sections) - set(SECTIONS)
        if unknown:
            raise InvalidIncident(f"Unknown sections {sorted(unknown)}; allowed: {', '.join(SECTIONS)}.")
        incident.sections = {**(incident.sections or {}), **{k: xml_safe(v)[:50_000] for k, v in edits.sections.items()}}
    if edits.fix_before is not None:
        incident.fix_before = xml_safe(edits.fix_before)[:20_000]
    if edits.fix_after is not None:
        incident.fix_after = xml_safe(edits.fix_after)[:20_000]
    if edits.log_entry is not None:
        text = xml_safe(edits.log_entry).strip()
        incident.log_entry_edited = bool(text)
        incident.log_entry = text[:5000]
    incident.touch()
    if incident.status == "published":
        _touch_retainer(session, incident)
    session.flush()
    return incident


def add_action(session: Session, incident: Incident, text: str, owner: str = "", due: dt.date | None = None,
               kind: str = "prevent") -> ActionItem:
    if kind not in ACTION_KINDS:
        raise InvalidIncident(f"Kind must be one of {', '.join(ACTION_KINDS)}, not {kind!r}.")
    text, owner = xml_safe(text), xml_safe(owner)
    check_date(due, "the due date ('due')")
    if not text.strip():
        raise InvalidIncident("An action item needs a description.")
    item = ActionItem(text=text.strip()[:500], owner=owner.strip()[:200], due=due, kind=kind)
    incident.actions.append(item)
    incident.touch()
    session.flush()
    return item


def add_event(session: Session, incident: Incident, at: dt.datetime | None, text: str) -> TimelineEvent:
    text = xml_safe(text)
    check_date(at, "the time ('at')")
    if not text.strip():
        raise InvalidIncident("A timeline event needs a description.")
    event = TimelineEvent(key=f"manual:{secrets.token_hex(6)}", at=at, text=text.strip()[:500], manual=True)
    incident.events.append(event)
    incident.touch()
    session.flush()
    return event


def set_hidden(session: Session, incident: Incident, key: str, hidden: bool) -> None:
    """Hide or show a timeline event (automatic ones are remembered by key)."""
    event = next((e for e in incident.events if e.key == key), None)
    if event is None:
        event = TimelineEvent(key=key[:200], manual=False)
        incident.events.append(event)
    event.hidden = hidden
    incident.touch()
    session.flush()


def _runs(session: Session, incident: Incident, blobs: BlobStore,
          parsed: dict[int, RunEvidence] | None = None) -> list[RunInput]:
    """The incident's runs; those in ``parsed`` (just read from their files) skip the Parquet read."""
    runs = []
    for link in incident.evidence:
        if link.evidence_id is None:
            continue
        row = store.get_evidence(session, incident.account_id, link.evidence_id)
        run = (parsed or {}).get(row.id) or store.evidence_from_row(row, blobs)
        runs.append(RunInput(link.role, run, f"{row.id}:{row.upload_sha256}:{row.part}"))
    return runs


def _entries(session: Session, incident: Incident) -> list[EntryInput]:
    phase = {link.time_entry_id: link.phase for link in incident.entries}
    if not phase:
        return []
    rows = session.scalars(select_owned(TimeEntry, incident.account_id).where(TimeEntry.id.in_(list(phase)))).all()
    return [EntryInput(r.id, phase[r.id], r.local_date, r.duration_s, r.description, r.project, r.task,
                       r.start_at, r.end_at) for r in sorted(rows, key=lambda r: (r.local_date, r.id))]


def report_input(session: Session, incident: Incident, blobs: BlobStore, author: str = "",
                 with_runs: bool = True, parsed: dict[int, RunEvidence] | None = None) -> ReportInput:
    """The report's inputs from stored rows. ``with_runs=False`` skips loading Parquet (cache keys)."""
    runs = _runs(session, incident, blobs, parsed) if with_runs else [
        RunInput(link.role, RunEvidence(), f"evidence:{link.evidence_id}") for link in incident.evidence
        if link.evidence_id is not None]
    profiles = [ProfileInput(link.profile_name, link.profile or {}, link.profile_sha256)
                for link in incident.evidence if link.evidence_id is None]
    return ReportInput(
        title=incident.title, slug=incident.slug, status=incident.status, author=author,
        environment=incident.environment, sections=dict(incident.sections or {}),
        fix_before=incident.fix_before, fix_after=incident.fix_after,
        log_entry=incident.log_entry if incident.log_entry_edited else "",
        runs=tuple(runs), profiles=tuple(profiles), entries=tuple(_entries(session, incident)),
        actions=tuple(ActionInput(a.text, a.owner, a.due, a.kind) for a in incident.actions),
        events=tuple(EventInput(e.key, e.at, e.text, e.manual, e.hidden) for e in incident.events),
        created=incident.created_at, severity=incident.severity or "", incident_status=incident.incident_status or "",
        milestones={name: at for name in MILESTONES if (at := getattr(incident, f"{name}_at")) is not None},
        gpu_hour_price=incident.gpu_hour_price, currency=incident.price_currency or "USD")


def refresh_generated(session: Session, incident: Incident, blobs: BlobStore, author: str = "",
                      parsed: dict[int, RunEvidence] | None = None) -> Report:
    """Recompute the environment line (unless edited) and the log entry (unless edited); return the report."""
    report = build_incident_report(report_input(session, incident, blobs, author, parsed=parsed))
    if not incident.environment:
        incident.environment = report.environment[:500]
    if not incident.log_entry_edited:
        incident.log_entry = report.log_entry_generated[:5000]
    session.flush()
    return report


def publish(session: Session, incident: Incident, published: bool = True) -> Incident:
    """Publish (or withdraw) the writeup; the retainer's public page changes at once (revision bump)."""
    if published and not (incident.log_entry or "").strip():
        raise InvalidIncident("Generate or write the log entry before publishing.")
    incident.status = "published" if published else "draft"
    incident.published_at = utcnow() if published else None
    incident.touch()
    _touch_retainer(session, incident)
    session.flush()
    return incident


def _touch_retainer(session: Session, incident: Incident) -> None:
    """The retainer's public page lists published log entries: a new revision re-renders it."""
    if incident.retainer_id is not None:
        retainer = session.get(Retainer, incident.retainer_id)
        if retainer is not None:
            bump_page_version(retainer)


def build_incident(session: Session, account: Account, title: str, runs: Sequence[tuple[str, Path]],
                   blobs: BlobStore, *, profiles: Sequence[Path] = (), retainer_id: int | None = None,
                   entries_tag: str | None = None) -> tuple[Incident, Report]:
    """A draft incident from files: runs (role, folder or file), profiles and tagged time entries.

    Runs are parsed once, from where they are; the report is built from that parsed evidence (the
    Parquet copies are for later requests). Returns the incident and its report.
    """
    for role, _ in runs:
        if role not in RUN_ROLES:
            raise InvalidIncident(f"Role must be one of {', '.join(RUN_ROLES)}, not {role!r}.")
    incident = create_incident(session, account.id, title, retainer_id)
    parsed: dict[int, RunEvidence] = {}
    for role, path in runs:
        row, run = _ingest_one(session, account.id, path, blobs)
        attach_run(session, incident, row.id, role)
        if run is not None:
            parsed[row.id] = run
    for path in profiles:
        attach_profile(session, incident, *read_profile(path))
    if entries_tag:
        assign_tagged(session, incident, entries_tag)
    return incident, refresh_generated(session, incident, blobs, account.display_name, parsed)


def incident_document(session: Session, incident: Incident, blobs: BlobStore, kind: Kind = "pdf", *,
                      author: str | None = None, pdf_url: str | None = None,
                      before_render: Callable[[], None] | None = None) -> bytes:
    """The incident's writeup as HTML or PDF bytes, rendered once per distinct inputs.

    ``before_render`` runs only when the document is not cached (a public page charges it to the
    client's render budget there: cached reads are free).
    """
    if author is None:
        author = session.scalar(select(Account.display_name).where(Account.id == incident.account_id)) or ""

    def full_inputs() -> ReportInput:
        if before_render is not None:
            before_render()
        return report_input(session, incident, blobs, author)

    return writeup_document(report_input(session, incident, blobs, author, with_runs=False), kind, cache=blobs,
                            full_inputs=full_inputs, pdf_url=pdf_url)
