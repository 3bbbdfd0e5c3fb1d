"""What a retainer's client sees of incidents: published writeups, rendered ahead, and their log lines."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core import progress
from hourtab.core.blobs import BlobStore
from hourtab.core.db import utcnow
from hourtab.timesheets.models import TimeEntry
from incidents.errors import EvidenceNotFound
from incidents.writeups import service
from incidents.writeups.document import Kind
from incidents.writeups.models import Incident


def published_by_slug(session: Session, retainer_id: int, slug: str) -> Incident:
    incident = session.scalars(select(Incident).where(Incident.retainer_id == retainer_id, Incident.slug == slug,
                                                      Incident.status == "published")).first()
    if incident is None:
        raise EvidenceNotFound("There is nothing at this address.")
    return incident


def prerender(session: Session, account_id: int, incident_id: int, blobs: BlobStore, public_url: str = "") -> Incident:
    """Render the writeup's PDF, and its public page when it has one, into the document cache.

    Through the one door every page uses (``service.incident_document``), with the page's own PDF
    link: the client's first visit after publishing is then a single blob read.
    """
    incident = service.get_incident(session, account_id, incident_id)
    kinds: tuple[Kind, ...] = ("pdf", "html") if public_url else ("pdf",)
    for i, kind in enumerate(kinds):
        progress.report("Rendering the PDF" if kind == "pdf" else "Rendering the page", i, len(kinds))
        service.incident_document(session, incident, blobs, kind,
                                  pdf_url=f"{public_url}.pdf" if kind == "html" else None)
    progress.report("Done", len(kinds), len(kinds))
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
