"""What a retainer's client sees of incidents: published writeups and their hours-page log lines."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.db import utcnow
from hourtab.timesheets.models import TimeEntry
from incidents.errors import EvidenceNotFound
from incidents.writeups.models import Incident


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
    entry = TimeEntry
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
