"""The time entries an incident bills: linked by id or by tag, each in a phase (investigation, fix,
validation…). Never commits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.scoping import select_owned
from hourtab.timesheets.models import TimeEntry
from incidents.errors import EvidenceNotFound
from incidents.writeups.errors import InvalidIncident
from incidents.writeups.models import Incident, IncidentEntry


def entries_tagged(session: Session, account_id: int, tag: str) -> list[int]:
    """Ids of the account's active entries carrying ``tag`` (tags are comma-separated)."""
    rows = session.execute(select_owned(TimeEntry, account_id).with_only_columns(TimeEntry.id, TimeEntry.tags)
                           .where(TimeEntry.tags.contains(tag), TimeEntry.status == "active")).all()
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
    ids = entries_tagged(session, incident.account_id, tag)
    rows = session.scalars(select(TimeEntry).where(TimeEntry.id.in_(ids))).all() if ids else []
    for row in rows:
        assign_entries(session, incident, [row.id], guess_phase(row.task, row.description))
    return len(rows)


def assign_entries(session: Session, incident: Incident, entry_ids: Iterable[int], phase: str) -> int:
    """Link time entries to the incident in ``phase`` (re-assigning an entry changes its phase)."""
    phase = (phase or "").strip().lower()
    if not phase or len(phase) > 40 or not re.fullmatch(r"[a-z][a-z \-]*", phase):
        raise InvalidIncident("A phase is a word such as investigation, fix or validation (letters, 1–40).")
    ids = list(dict.fromkeys(int(i) for i in entry_ids))
    found = set(session.scalars(select_owned(TimeEntry, incident.account_id).with_only_columns(TimeEntry.id)
                                .where(TimeEntry.id.in_(ids)))) if ids else set()
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
