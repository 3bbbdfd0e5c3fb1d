"""Incidents: the writeup's human parts and its links to evidence, time entries and follow-ups.

Everything a report computes (KPIs, charts, diagnosis) is derived at render time from the linked
evidence and entries, so the stored rows hold only what a person decided: titles, sections, roles,
phases, action items, manual timeline events and which automatic events to hide.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, Boolean, Date, ForeignKey, Integer, Numeric, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, declared_attr, mapped_column, relationship

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.scoping import AccountOwned

PHASES = ("investigation", "fix", "validation")
ACTION_KINDS = ("prevent", "detect", "mitigate")
#: Markdown sections a person writes, in report order (the keys of ``Incident.sections``).
SECTIONS = ("summary", "impact", "detection", "root_cause", "went_well", "went_wrong", "lessons")
#: Severity as postmortem templates grade it: SEV1 (worst) to SEV4; "" is not graded yet.
SEVERITIES = ("SEV1", "SEV2", "SEV3", "SEV4")
#: Where the incident stands; "" lets the report derive it from the milestones it finds.
INCIDENT_STATUSES = ("investigating", "identified", "monitoring", "resolved")
#: The postmortem timeline's milestones, in order; each may be set by hand or found in the evidence.
MILESTONES = ("began", "detected", "diagnosed", "resolved")


class Incident(AccountOwned, Base):
    __tablename__ = "incidents"
    __table_args__ = (UniqueConstraint("account_id", "slug"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int | None] = mapped_column(ForeignKey("retainers.id", ondelete="SET NULL"),
                                                    index=True, nullable=True)
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    slug: Mapped[str] = mapped_column(String(120), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="draft")
    #: Filled from the runs' evidence at build time; the consultant may edit it.
    environment: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    #: Markdown per section name in ``SECTIONS``; sanitised when rendered, stored as typed.
    sections: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False, default=dict)
    fix_before: Mapped[str] = mapped_column(Text, nullable=False, default="")
    fix_after: Mapped[str] = mapped_column(Text, nullable=False, default="")
    #: Generated from the evidence; once the consultant edits it, ``log_entry_edited`` keeps it.
    log_entry: Mapped[str] = mapped_column(Text, nullable=False, default="")
    log_entry_edited: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    severity: Mapped[str] = mapped_column(String(8), nullable=False, default="")
    incident_status: Mapped[str] = mapped_column(String(16), nullable=False, default="")
    #: Milestones the consultant set; a ``None`` one is found in the runs' times and time entries.
    began_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    detected_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    diagnosed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    resolved_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: What one GPU-hour costs the client (the consultant's figure), for the impact in money.
    gpu_hour_price: Mapped[Decimal | None] = mapped_column(Numeric(10, 2), nullable=True)
    price_currency: Mapped[str] = mapped_column(String(3), nullable=False, default="USD")
    #: Bumped on every change, so caches keyed on it (the rendered PDF) never serve stale bytes.
    revision: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    published_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    evidence: Mapped[list[IncidentEvidence]] = relationship(
        cascade="all, delete-orphan", order_by="IncidentEvidence.id")
    entries: Mapped[list[IncidentEntry]] = relationship(
        cascade="all, delete-orphan", order_by="IncidentEntry.id")
    actions: Mapped[list[ActionItem]] = relationship(
        cascade="all, delete-orphan", order_by="ActionItem.id")
    events: Mapped[list[TimelineEvent]] = relationship(
        cascade="all, delete-orphan", order_by="TimelineEvent.id")

    def touch(self) -> None:
        self.revision = (self.revision or 0) + 1
        self.updated_at = utcnow()


class IncidentPart:
    """Mixin for the rows an incident owns: reached through its collections, deleted with it."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True)

    @declared_attr
    def incident_id(cls) -> Mapped[int]:  # noqa: N805 - declared_attr receives the class
        return mapped_column(ForeignKey("incidents.id", ondelete="CASCADE"), index=True, nullable=False)


class IncidentEvidence(IncidentPart, Base):
    """A run or a profile attached to an incident in a role.

    Runs point at the ``evidence`` table (parsed once, kept as Parquet). Profiles are small JSON
    documents (our profile.json, or an ``inspect_profile`` summary of a table or trace), kept here
    with their file name, which every figure taken from them cites.
    """

    __tablename__ = "incident_evidence"
    __table_args__ = (UniqueConstraint("incident_id", "evidence_id"),)

    evidence_id: Mapped[int | None] = mapped_column(ForeignKey("evidence.id", ondelete="CASCADE"), index=True,
                                                    nullable=True)
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    profile_name: Mapped[str] = mapped_column(String(300), nullable=False, default="")
    profile: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: sha256 of the profile document, part of the rendered PDF's cache key.
    profile_sha256: Mapped[str] = mapped_column(String(64), nullable=False, default="")


class IncidentEntry(IncidentPart, Base):
    """A time entry spent on the incident, and the phase it belongs to."""

    __tablename__ = "incident_entries"
    __table_args__ = (UniqueConstraint("incident_id", "time_entry_id"),)

    time_entry_id: Mapped[int] = mapped_column(ForeignKey("time_entries.id", ondelete="CASCADE"), index=True,
                                               nullable=False)
    phase: Mapped[str] = mapped_column(String(40), nullable=False, default="investigation")


class ActionItem(IncidentPart, Base):
    __tablename__ = "incident_actions"

    text: Mapped[str] = mapped_column(String(500), nullable=False)
    owner: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    due: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False, default="prevent")


class TimelineEvent(IncidentPart, Base):
    """A manual event the consultant added, or a hidden flag on an automatic one (by its ``key``)."""

    __tablename__ = "incident_events"
    __table_args__ = (UniqueConstraint("incident_id", "key"),)

    #: ``manual:<n>`` for added events; the automatic event's key (``run:<id>:start``…) otherwise.
    key: Mapped[str] = mapped_column(String(200), nullable=False)
    at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    text: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    manual: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    hidden: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
