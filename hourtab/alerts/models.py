"""Alert settings per retainer, client subscriptions, and the events and deliveries already made.

``alert_events`` is unique per (retainer, alert, period): however often an import or a retried
job evaluates the thresholds, one alert exists per period. ``alert_deliveries`` is unique per
(event, recipient), and a delivery row is committed before the message is handed to SMTP, so a
retried send job never mails anyone twice.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.scoping import AccountOwned

#: Every alert a retainer can send, in the order the settings page lists them.
ALERTS = ("used_80", "used_100", "overage", "period_closed", "incident_published")
#: The threshold alerts, lowest first: when one check crosses several, only the highest is sent.
THRESHOLDS = ("used_80", "used_100", "overage")


class AlertSettings(AccountOwned, Base):
    __tablename__ = "alert_settings"

    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), primary_key=True)
    enabled: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=lambda: list(ALERTS))
    copy_to_consultant: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class AlertSubscription(Base):
    __tablename__ = "alert_subscriptions"
    __table_args__ = (UniqueConstraint("retainer_id", "email", name="uq_alert_subscriptions_retainer_id_email"),
                      UniqueConstraint("token", name="uq_alert_subscriptions_token"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), index=True,
                                             nullable=False)
    #: Used to send and nothing else: no page, export or log shows it.
    email: Mapped[str] = mapped_column(String(320), nullable=False)
    #: Secret in the confirm and unsubscribe links.
    token: Mapped[str] = mapped_column(String(64), nullable=False)
    confirmed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class AlertEvent(Base):
    __tablename__ = "alert_events"
    __table_args__ = (UniqueConstraint("retainer_id", "alert", "period_key",
                                       name="uq_alert_events_retainer_id_alert_period_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), index=True,
                                             nullable=False)
    alert: Mapped[str] = mapped_column(String(32), nullable=False)
    #: The period's first day (threshold and closing alerts) or ``incident-<id>``.
    period_key: Mapped[str] = mapped_column(String(64), nullable=False)
    #: pending → sent, or superseded (a higher threshold was crossed by the same change).
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="pending")
    facts: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class AlertDelivery(Base):
    __tablename__ = "alert_deliveries"
    __table_args__ = (UniqueConstraint("event_id", "recipient", name="uq_alert_deliveries_event_id_recipient"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("alert_events.id", ondelete="CASCADE"), nullable=False)
    #: ``sub:<subscription id>`` or ``consultant`` (never the address itself).
    recipient: Mapped[str] = mapped_column(String(40), nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
