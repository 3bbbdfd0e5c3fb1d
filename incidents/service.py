"""Incidents as stored objects: build from files, attach evidence and entries, edit, publish.

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
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab import jsonbounded
from hourtab.blobs import BlobStore
from hourtab.bounds import check_date
from hourtab.db import utcnow
from hourtab.errors import NotFound
from hourtab.scoping import get_owned, select_owned
from hourtab.text import xml_safe
from incidents import store
from incidents.errors import EvidenceNotFound, InvalidEvidence
from incidents.evidence_models import Evidence
from incidents.models import (
    ACTION_KINDS,
    SECTIONS,
    ActionItem,
    Incident,
    IncidentEntry,
    IncidentEvidence,
    TimelineEvent,
)
from incidents.report.inputs import ActionInput, EntryInput, EventInput, ProfileInput, ReportInput, RunInput

RUN_ROLES = ("incident", "baseline", "fixed")


class InvalidIncident(InvalidEvidence):
    """An edit we refuse (unknown role or phase, empty title); the message says what is allowed."""


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
        from hourtab.retainers.models import Retainer

        try:
            get_owned(session, Retainer, account_id, retainer_id)
        except NotFound as e:
            raise EvidenceNotFound(f"retainer {retainer_id} not found") from e
    incident = Incident(account_id=account_id, title=title, slug=_unique_slug(session, account_id, title),
                        retainer_id=retainer_id, status="draft", sections={})
    session.add(incident)
    session.flush()
    return incident


def get_incident(session: Session, account_id: int, incident_id: int) -> Incident:
    try:
        return get_owned(session, Incident, account_id, incident_id)
    except NotFound as e:
        raise EvidenceNotFound(f"incident {incident_id} not found") from e


def list_incidents(session: Session, account_id: int) -> list[Incident]:
    return list(session.scalars(select_owned(Incident, account_id).order_by(Incident.created_at.desc(),
                                                                            Incident.id.desc())))


def ingest_run_path(session: Session, account_id: int, path: Path, blobs: BlobStore) -> Evidence:
    """Store a run folder, ``.wandb`` file or export as evidence (a folder is archived first)."""
    path = Path(path)
    if not path.exists():
        raise InvalidEvidence(f"{path} does not exist")
    if path.is_dir():
        with tempfile.TemporaryDirectory() as tmp:
            archive = Path(tmp) / f"{path.name}.tar.gz"
            with tarfile.open(archive, "w:gz") as tar:
                tar.add(path, arcname=path.name, filter=_plain_members)
            rows = store.ingest_upload(session, account_id, archive, archive.name, blobs)
    else:
        rows = store.ingest_upload(session, account_id, path, path.name, blobs)
    if len(rows) != 1:
        raise InvalidEvidence(f"{path.name} holds {len(rows)} runs; attach one run per role")
    return rows[0]


def _plain_members(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Archive regular files and folders only (a run folder's symlinks would be refused on ingest)."""
    return info if info.isfile() or info.isdir() else None


def read_profile(path: Path) -> tuple[str, dict[str, Any]]:
    """Our profile.json as it is (it has per-mode figures); other captures through ``inspect_profile``."""
    from incidents.profiles import inspect_profile

    path = Path(path)
    if not path.is_file():
        raise InvalidEvidence(f"{path} is not a file")
    if path.suffix == ".json":
        try:
            document = jsonbounded.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            document = None
        except jsonbounded.TooDeep as e:
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


def _entry_model():
    from hourtab.timesheets.models import TimeEntry

    return TimeEntry


def entries_tagged(session: Session, account_id: int, tag: str) -> list[int]:
    """Ids of the account's active entries carrying ``tag`` (tags are comma-separated)."""
    entry = _entry_model()
    rows = session.execute(select_owned(entry, account_id).with_only_columns(entry.id, entry.tags)
                           .where(entry.tags.contains(tag), entry.status == "active")).all()
    wanted = tag.strip().lower()
    return [rid for rid, tags in rows if wanted in {t.strip().lower() for t in (tags or "").split(",")}]


def guess_phase(task: str, description: str) -> str:
    """A first phase for entries assigned in bulk (by tag): the consultant can change it."""
    text = f"{task} {description}".lower()
    if re.search(r"\bvalidat|\bverif|\bconfirm|\bre-?ran|\bbenchmark", text):
        return "validation"
    if re.search(r"\bfix|\bpatch|\bchang|\bimplement", text):
        return "fix"
    return "investigation"


def assign_tagged(session: Session, incident: Incident, tag: str) -> int:
    """Link every entry tagged ``tag``, each in the phase its task or description suggests."""
    entry = _entry_model()
    ids = entries_tagged(session, incident.account_id, tag)
    rows = session.scalars(select(entry).where(entry.id.in_(ids))).all() if ids else []
    for row in rows:
        assign_entries(session, incident, [row.id], guess_phase(row.task, row.description))
    return len(rows)


def assign_entries(session: Session, incident: Incident, entry_ids: Iterable[int], phase: str) -> int:
    """Link time entries to the incident in ``phase`` (re-assigning an entry changes its phase)."""
    phase = (phase or "").strip().lower()
    if not phase or len(phase) > 40 or not re.fullmatch(r"[a-z][a-z \-]*", phase):
        raise InvalidIncident("A phase is a word such as investigation, fix or validation (letters, 1–40).")
    ids = list(dict.fromkeys(int(i) for i in entry_ids))
    entry = _entry_model()
    found = set(session.scalars(select_owned(entry, incident.account_id).with_only_columns(entry.id)
                                .where(entry.id.in_(ids)))) if ids else set()
    missing = [i for i in ids if i not in found]
    if missing:
        raise EvidenceNotFound(f"time entries not found: {', '.join(map(str, missing[:10]))}")
    existing = {link.time_entry_id: link for link in incident.entries}
    for i in ids:
        if i in existing:
            existing[i].phase = phase
        else:
            incident.entries.append(IncidentEntry(time_entry_id=i, phase=phase))
    incident.touch()
    session.flush()
    return len(ids)


def unassign_entry(session: Session, incident: Incident, entry_id: int) -> None:
    incident.entries[:] = [link for link in incident.entries if link.time_entry_id != entry_id]
    incident.touch()
    session.flush()


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


def _runs(session: Session, incident: Incident, blobs: BlobStore) -> list[RunInput]:
    runs = []
    for link in incident.evidence:
        if link.evidence_id is None:
            continue
        row = store.get_evidence(session, incident.account_id, link.evidence_id)
        runs.append(RunInput(link.role, store.evidence_from_row(row, blobs), f"{row.id}:{row.upload_sha256}:{row.part}"))
    return runs


def _entries(session: Session, incident: Incident) -> list[EntryInput]:
    entry = _entry_model()
    phase = {link.time_entry_id: link.phase for link in incident.entries}
    if not phase:
        return []
    rows = session.scalars(select_owned(entry, incident.account_id).where(entry.id.in_(list(phase)))).all()
    return [EntryInput(r.id, phase[r.id], r.local_date, r.duration_s, r.description, r.project, r.task,
                       r.start_at, r.end_at) for r in sorted(rows, key=lambda r: (r.local_date, r.id))]


def report_input(session: Session, incident: Incident, blobs: BlobStore, author: str = "",
                 with_runs: bool = True) -> ReportInput:
    """The report's inputs from stored rows. ``with_runs=False`` skips loading Parquet (cache keys)."""
    runs = _runs(session, incident, blobs) if with_runs else [
        RunInput(link.role, None, f"evidence:{link.evidence_id}") for link in incident.evidence
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
        created=incident.created_at)


def refresh_generated(session: Session, incident: Incident, blobs: BlobStore, author: str = ""):
    """Recompute the environment line (unless edited) and the log entry (unless edited); return the report."""
    from incidents.report.build import build_report

    report = build_report(report_input(session, incident, blobs, author))
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
    if incident.retainer_id is not None:
        from hourtab.retainers.models import Retainer

        retainer = session.get(Retainer, incident.retainer_id)
        if retainer is not None:
            retainer.revision = (retainer.revision or 0) + 1
    session.flush()
    return incident


def published_by_slug(session: Session, retainer_id: int, slug: str) -> Incident:
    incident = session.scalars(select(Incident).where(Incident.retainer_id == retainer_id, Incident.slug == slug,
                                                      Incident.status == "published")).first()
    if incident is None:
        raise EvidenceNotFound("There is nothing at this address.")
    return incident


@dataclass(frozen=True)
class LogLine:
    slug: str
    title: str
    text: str
    day: dt.date


def published_log_lines(session: Session, retainer_id: int) -> dict[dt.date, list[LogLine]]:
    """Published incidents' log entries by the day of their last session (for the public hours page)."""
    entry = _entry_model()
    incidents = session.scalars(select(Incident).where(Incident.retainer_id == retainer_id,
                                                       Incident.status == "published")).all()
    by_day: dict[dt.date, list[LogLine]] = {}
    for incident in incidents:
        ids = [link.time_entry_id for link in incident.entries]
        last = session.scalar(select(entry.local_date).where(entry.id.in_(ids)).order_by(entry.local_date.desc())) \
            if ids else None
        day = last or (incident.published_at or utcnow()).date()
        by_day.setdefault(day, []).append(LogLine(incident.slug, incident.title, incident.log_entry, day))
    return by_day
