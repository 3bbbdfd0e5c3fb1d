"""Retainers, their top-ups and adjustments, and which time entries count against which retainer.

``retainer_entries`` has ``entry_id`` as its primary key: the database itself guarantees that an
entry belongs to at most one retainer, whatever the match rules say.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Table,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.scoping import AccountOwned
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.terms import Overage, PeriodKind, Rollover, Rounding, RoundingMode, Terms

retainer_entries = Table(
    "retainer_entries", Base.metadata,
    Column("entry_id", ForeignKey("time_entries.id", ondelete="CASCADE"), primary_key=True),
    Column("retainer_id", ForeignKey("retainers.id", ondelete="CASCADE"), nullable=False, index=True),
    #: The entry's local day in the retainer's zone (``days``): ledgers sum by it (``totals``).
    Column("day", Date, nullable=False),
    Index("ix_retainer_entries_retainer_id_day", "retainer_id", "day"),
)

#: A retainer's counted entries summed per local day, under each rounding rule it keeps
#: (``retainer_total_rules``): kept in the transaction of every change by ``kept_totals``, so a
#: ledger reads a row a day, never its entries.
retainer_day_totals = Table(
    "retainer_day_totals", Base.metadata,
    Column("retainer_id", ForeignKey("retainers.id", ondelete="CASCADE"), primary_key=True),
    Column("rule", String(24), primary_key=True),  # ``Rounding.key``
    Column("day", Date, primary_key=True),
    Column("entries", Integer, nullable=False),
    Column("rounded_s", BigInteger, nullable=False),
)

#: The rounding rules whose day totals are kept for a retainer (every rule its terms use).
retainer_total_rules = Table(
    "retainer_total_rules", Base.metadata,
    Column("retainer_id", ForeignKey("retainers.id", ondelete="CASCADE"), primary_key=True),
    Column("rule", String(24), primary_key=True),
)


class Retainer(AccountOwned, Base):
    __tablename__ = "retainers"
    __table_args__ = (UniqueConstraint("public_token"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    client: Mapped[str] = mapped_column(String(200), nullable=False)
    allotment_s: Mapped[int] = mapped_column(Integer, nullable=False)
    period: Mapped[str] = mapped_column(String(16), nullable=False, default="monthly")
    reset_day: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    start_date: Mapped[dt.date] = mapped_column(Date, nullable=False)
    timezone: Mapped[str] = mapped_column(String(64), nullable=False, default="UTC")
    rollover: Mapped[str] = mapped_column(String(8), nullable=False, default="none")
    rollover_cap_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    rollover_expiry_periods: Mapped[int | None] = mapped_column(Integer, nullable=True)
    overage: Mapped[str] = mapped_column(String(8), nullable=False, default="carry")
    overage_rate: Mapped[Decimal | None] = mapped_column(Numeric(12, 2), nullable=True)
    rounding_min: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    rounding_mode: Mapped[str] = mapped_column(String(8), nullable=False, default="up")
    minimum_min: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    fee: Mapped[Decimal | None] = mapped_column(Numeric(16, 4), nullable=True)
    currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    hourly_rate: Mapped[Decimal | None] = mapped_column(Numeric(16, 4), nullable=True)
    #: What the client's documents are written in (``hourtab.core.i18n.LANGUAGES``); not a versioned
    #: term: a statement re-rendered later is written in the language the retainer has then.
    language: Mapped[str] = mapped_column(String(8), nullable=False, default="en", server_default="en")
    match_rules: Mapped[dict] = mapped_column(JSON, nullable=False)
    #: ``None`` while the public page is disabled; rotated by replacing it (old URL 404s at once).
    public_token: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: The link a "Disable" put aside, so "Re-enable" brings back the very link the client bookmarked.
    disabled_token: Mapped[str | None] = mapped_column(String(64), nullable=True)
    active: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    #: Bumped (with ``updated_at``) in the same transaction as every change that alters the public
    #: page, so every worker's cache of this retainer's pages sees it, and no other retainer's does.
    revision: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)

    def terms(self) -> Terms:
        return Terms(
            allotment_s=self.allotment_s, start=self.start_date, period=PeriodKind(self.period),
            reset_day=self.reset_day, timezone=self.timezone, rollover=Rollover(self.rollover),
            rollover_cap_s=self.rollover_cap_s, rollover_expiry_periods=self.rollover_expiry_periods,
            overage=Overage(self.overage), overage_rate=self.overage_rate,
            rounding=Rounding(self.rounding_min, RoundingMode(self.rounding_mode), self.minimum_min),
            fee=self.fee, currency=self.currency, hourly_rate=self.hourly_rate)

    def rules(self) -> MatchRules:
        return MatchRules.from_json(self.match_rules)


class RetainerTerms(AccountOwned, Base):
    """One version of a retainer's per-period terms, in force from ``effective_from`` onward.

    The period structure (kind, reset day, start, time zone) stays on ``Retainer``; what a period
    grants and how it closes is versioned here, so a change never rewrites a closed period.
    """

    __tablename__ = "retainer_terms"
    __table_args__ = (UniqueConstraint("retainer_id", "effective_from"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), index=True,
                                             nullable=False)
    #: First day of the first period these terms apply to.
    effective_from: Mapped[dt.date] = mapped_column(Date, nullable=False)
    allotment_s: Mapped[int] = mapped_column(Integer, nullable=False)
    rollover: Mapped[str] = mapped_column(String(8), nullable=False)
    rollover_cap_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    rollover_expiry_periods: Mapped[int | None] = mapped_column(Integer, nullable=True)
    overage: Mapped[str] = mapped_column(String(8), nullable=False)
    overage_rate: Mapped[Decimal | None] = mapped_column(Numeric(12, 2), nullable=True)
    rounding_min: Mapped[int] = mapped_column(Integer, nullable=False)
    rounding_mode: Mapped[str] = mapped_column(String(8), nullable=False)
    minimum_min: Mapped[int] = mapped_column(Integer, nullable=False)
    fee: Mapped[Decimal | None] = mapped_column(Numeric(16, 4), nullable=True)
    currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    hourly_rate: Mapped[Decimal | None] = mapped_column(Numeric(16, 4), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)

    def terms(self, base: Terms) -> Terms:
        """These figures on ``base``'s period structure."""
        return replace(base, allotment_s=self.allotment_s, rollover=Rollover(self.rollover),
                       rollover_cap_s=self.rollover_cap_s, rollover_expiry_periods=self.rollover_expiry_periods,
                       overage=Overage(self.overage), overage_rate=self.overage_rate,
                       rounding=Rounding(self.rounding_min, RoundingMode(self.rounding_mode), self.minimum_min),
                       fee=self.fee, currency=self.currency, hourly_rate=self.hourly_rate)


class RetainerCredit(AccountOwned, Base):
    """A top-up (prepaid block) or a manual adjustment; the reason is shown to the client."""

    __tablename__ = "retainer_credits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), index=True,
                                             nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    on_date: Mapped[dt.date] = mapped_column(Date, nullable=False)
    seconds: Mapped[int] = mapped_column(Integer, nullable=False)
    reason: Mapped[str] = mapped_column(String(500), nullable=False)
    #: What a top-up was bought for, in ``currency`` (``None``: hours given, not sold).
    amount: Mapped[Decimal | None] = mapped_column(Numeric(16, 4), nullable=True)
    currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class PeriodRevision(AccountOwned, Base):
    """A closed period's figures changed after it closed: what it was, what it is, when and why.

    Rows are only ever added. The figure a client saw before the change is kept here, so a
    revised period says "revised on DATE (was X h)" instead of silently showing a new number.
    """

    __tablename__ = "period_revisions"
    __table_args__ = (UniqueConstraint("retainer_id", "period_start", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), index=True,
                                             nullable=False)
    #: First local day of the revised period (periods are named by their start).
    period_start: Mapped[dt.date] = mapped_column(Date, nullable=False)
    #: 1 for the period's first revision, then 2, 3…: the statement's revision number.
    number: Mapped[int] = mapped_column(Integer, nullable=False)
    revised_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    was_used_s: Mapped[int] = mapped_column(Integer, nullable=False)
    used_s: Mapped[int] = mapped_column(Integer, nullable=False)
    was_entries: Mapped[int] = mapped_column(Integer, nullable=False)
    entries: Mapped[int] = mapped_column(Integer, nullable=False)
    #: What changed it: "import", "removal", "restore", "rules", "migration", "sync".
    reason: Mapped[str] = mapped_column(String(16), nullable=False)
    upload_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
