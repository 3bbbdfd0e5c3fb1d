"""Subscriptions (double opt-in), which alerts are due, and delivering each alert once per recipient.

Services take the session and never commit. Delivery reserves each (event, recipient) pair and
has the caller make the reservation durable (``durable``: the job runner's checkpoint) before
the message goes to SMTP, because "sent twice" is the failure a client notices, while a lost
message after a crash is at worst one missed notice.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hourtab.alerts import compose
from hourtab.alerts.message import build_message
from hourtab.alerts.models import (
    ALERTS,
    AlertDelivery,
    AlertEvent,
    AlertSettings,
    AlertSubscription,
)
from hourtab.core.accounts import Account, normalize_email
from hourtab.core.db import utcnow
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.i18n import N_, list_of, writer
from hourtab.core.mail import send
from hourtab.core.scoping import get_owned
from hourtab.retainers import ledger_reads
from hourtab.retainers.assign import bump_page_version
from hourtab.retainers.ledger import Ledger, PeriodBalance
from hourtab.retainers.models import Retainer
from hourtab.retainers.totals import no_periods

#: What each alert tells the client, as the subscribe form and the confirmation e-mail list them.
WHEN = {
    "used_80": N_("when 80 % of a period's hours are used"),
    "used_100": N_("when all of them are used"),
    "overage": N_("when more hours are worked than the period holds"),
    "period_closed": N_("when a period closes (with its statement)"),
    "incident_published": N_("when an incident report is published"),
}


@dataclass(frozen=True)
class Recipient:
    key: str                 # what alert_deliveries stores: never the address
    email: str
    unsubscribe_token: str   # empty for the consultant's copy
    is_copy: bool


def settings_for(session: Session, retainer: Retainer) -> AlertSettings:
    """The retainer's settings, or the defaults (every alert, copy on) without storing them."""
    row = session.get(AlertSettings, retainer.id)
    return row or AlertSettings(retainer_id=retainer.id, account_id=retainer.account_id, enabled=list(ALERTS),
                                copy_to_consultant=True, created_at=retainer.created_at)


def save_settings(session: Session, account_id: int, retainer_id: int, enabled: list[str],
                  copy_to_consultant: bool) -> AlertSettings:
    retainer = get_owned(session, Retainer, account_id, retainer_id)
    unknown = sorted(set(enabled) - set(ALERTS))
    if unknown:
        raise InvalidInput(f"unknown alert {unknown[0]!r}; choose from {', '.join(ALERTS)}")
    row = session.get(AlertSettings, retainer.id)
    if row is None:
        row = AlertSettings(retainer_id=retainer.id, account_id=account_id, created_at=retainer.created_at)
        session.add(row)
    row.enabled = [a for a in ALERTS if a in enabled]
    row.copy_to_consultant = bool(copy_to_consultant)
    bump_page_version(retainer)  # the client's page lists the alerts it would get
    session.flush()
    return row


def alerts_when(enabled: list[str], language: str | None = None) -> str:
    """The alerts a subscriber gets, as "when …, when … and when …" ("" when the retainer sends none),
    in the client's ``language``."""
    w = writer(language)
    parts = [w.gettext(WHEN[a]) for a in ALERTS if a in enabled]
    if not parts:
        return ""
    if "used_100" in enabled and "used_80" not in enabled:
        parts[0] = w.gettext("when all of a period's hours are used")
    return list_of(parts, w)


def subscribe(session: Session, retainer: Retainer, email: str) -> AlertSubscription | None:
    """A pending subscription that needs its confirmation e-mail, or None when already confirmed.

    The caller answers the same either way, so the form never reveals who is subscribed. The
    address is kept in the one spelling log-ins use (``normalize_email``), so Unicode or case
    variants of one inbox are one subscription.
    """
    email = normalize_email(email)
    row = session.scalar(select(AlertSubscription).where(AlertSubscription.retainer_id == retainer.id,
                                                         AlertSubscription.email == email))
    if row is not None:
        return None if row.confirmed_at else row
    row = AlertSubscription(retainer_id=retainer.id, email=email, token=secrets.token_urlsafe(32))
    session.add(row)
    session.flush()
    return row


def by_subscription_token(session: Session, token: str) -> AlertSubscription:
    """The subscription a link names, whatever the retainer's page token is now.

    Confirmation and unsubscribe links belong to the subscription: rotating or disabling the public
    link must neither break a confirmation already sent nor leave an address subscribed with no way out.
    """
    row = session.scalar(select(AlertSubscription).where(AlertSubscription.token == token)) if token else None
    if row is None:
        raise NotFound("This link is no longer valid (already unsubscribed).")
    return row


def unsubscribe_by_token(session: Session, token: str) -> None:
    """Forget the address the link names (nothing of it is kept)."""
    session.delete(by_subscription_token(session, token))
    session.flush()


def confirm(session: Session, token: str) -> AlertSubscription:
    """Confirm the subscription the link names (double opt-in); confirming twice changes nothing."""
    row = by_subscription_token(session, token)
    if row.confirmed_at is None:
        row.confirmed_at = utcnow()
        session.flush()
    return row


def subscriber_counts(session: Session, retainer_id: int) -> tuple[int, int]:
    """(confirmed, waiting for confirmation): the consultant sees counts, never addresses."""
    rows = dict(session.execute(select(AlertSubscription.confirmed_at.is_not(None), func.count())
                                .where(AlertSubscription.retainer_id == retainer_id)
                                .group_by(AlertSubscription.confirmed_at.is_not(None))).all())
    return rows.get(True, 0), rows.get(False, 0)


def crossed(balance: PeriodBalance) -> list[str]:
    """The threshold alerts the period has reached, lowest first."""
    used, available = balance.used_s, balance.available_s
    if available <= 0:
        return ["used_80", "used_100", "overage"] if used > 0 else []
    out = []
    if used * 100 >= available * 80:
        out.append("used_80")
    if used >= available:
        out.append("used_100")
    if used > available:
        out.append("overage")
    return out


def _add_event(session: Session, retainer_id: int, alert: str, key: str, facts: dict) -> AlertEvent | None:
    """Insert the event unless it exists; the unique constraint settles races between workers."""
    exists = session.scalar(select(AlertEvent.id).where(AlertEvent.retainer_id == retainer_id,
                                                        AlertEvent.alert == alert, AlertEvent.period_key == key))
    if exists:
        return None
    event = AlertEvent(retainer_id=retainer_id, alert=alert, period_key=key, facts=facts)
    try:
        with session.begin_nested():
            session.add(event)
    except IntegrityError:
        return None
    return event


def due_events(session: Session, retainer: Retainer, ledger: Ledger) -> list[AlertEvent]:
    """New events for the thresholds the current period reached and the last closed period."""
    enabled = set(settings_for(session, retainer).enabled)
    current = ledger.current
    key = current.period.start.isoformat()
    facts = {"used_s": current.used_s, "available_s": current.available_s, "period": current.period.label}
    new = [e for a in crossed(current) if a in enabled
           if (e := _add_event(session, retainer.id, a, key, facts)) is not None]
    for event in new[:-1]:            # one change crossing 80 % and 100 % sends the 100 % alert only
        event.status = "superseded"
    closed = [p for p in ledger.periods if not p.is_open]
    if "period_closed" in enabled and closed:
        last = closed[-1]
        ended = dt.datetime.combine(last.period.end, dt.time(), tzinfo=retainer.terms().tz)
        if ended >= retainer.created_at:   # not for history imported after the fact
            closing = _add_event(session, retainer.id, "period_closed", last.period.start.isoformat(),
                                 {"used_s": last.used_s, "available_s": last.available_s,
                                  "period": last.period.label, "month": last.period.month_key})
            if closing is not None:
                new.append(closing)
    session.flush()
    return [e for e in new if e.status == "pending"]


def due_alerts(session: Session, account_id: int, now: dt.datetime) -> list[AlertEvent]:
    """The account's new alert events (each exists once per retainer, alert and period).

    The ledgers are read as they stand: every import, sync and removal routes the entries it writes
    in its own transaction, so there is nothing left to route here."""
    events: list[AlertEvent] = []
    for retainer in session.scalars(select(Retainer).where(Retainer.account_id == account_id,
                                                           Retainer.active.is_(True),
                                                           Retainer.public_token.is_not(None))):
        events += due_events(session, retainer, ledger_reads.retainer_ledger(session, retainer, now, entries=no_periods))
    return events


def incident_published(session: Session, retainer_id: int | None, incident_id: int, title: str,
                       slug: str) -> AlertEvent | None:
    """The alert for a writeup just published for the retainer's client (None when not sent)."""
    retainer = session.get(Retainer, retainer_id) if retainer_id is not None else None
    if retainer is None or not retainer.public_token:
        return None
    return incident_event(session, retainer, incident_id, title, f"/h/{retainer.public_token}/incidents/{slug}")


def incident_event(session: Session, retainer: Retainer, incident_id: int, title: str,
                   url_path: str) -> AlertEvent | None:
    if "incident_published" not in settings_for(session, retainer).enabled:
        return None
    event = _add_event(session, retainer.id, "incident_published", f"incident-{incident_id}",
                       {"title": title, "path": url_path})
    session.flush()
    return event


def recipients(session: Session, retainer: Retainer) -> list[Recipient]:
    subs = session.scalars(select(AlertSubscription).where(AlertSubscription.retainer_id == retainer.id,
                                                           AlertSubscription.confirmed_at.is_not(None))
                           .order_by(AlertSubscription.id))
    out = [Recipient(f"sub:{s.id}", s.email, s.token, False) for s in subs]
    if settings_for(session, retainer).copy_to_consultant:
        account = session.get_one(Account, retainer.account_id)     # the retainer's owner: always there
        out.append(Recipient("consultant", account.email, "", True))
    return out


def reserve_delivery(session: Session, event_id: int, recipient: str) -> AlertDelivery | None:
    """Claim the right to send this event to this recipient, once ever (None: already claimed)."""
    delivery = AlertDelivery(event_id=event_id, recipient=recipient)
    try:
        with session.begin_nested():
            session.add(delivery)
    except IntegrityError:
        return None
    return delivery


def deliver(session: Session, event_id: int, mail: compose.MailSettings, durable: Callable[[], None],
            now: dt.datetime | None = None) -> int:
    """Send the event's e-mail to each recipient not sent it yet; returns how many were sent now.

    Each reservation is made durable before its message goes to SMTP; a refused message gives
    its reservation back (durably too), so a retry may send that one.
    """
    event = session.get(AlertEvent, event_id)
    if event is None:
        return 0
    retainer = session.get(Retainer, event.retainer_id)
    if retainer is None or not retainer.public_token:
        return 0
    draft = compose.alert_draft(session, event, retainer, mail.public_url, now or utcnow())
    sent = 0
    for r in recipients(session, retainer):
        delivery = reserve_delivery(session, event.id, r.key)
        if delivery is None:
            continue                                        # sent (or being sent) by an earlier attempt
        durable()
        try:
            send(mail.smtp_url, build_message(draft.to(r.email, r.unsubscribe_token, r.is_copy), mail.sender))
        except Exception:
            session.delete(delivery)
            durable()
            raise
        delivery.sent_at = utcnow()
        sent += 1
    event.status, event.sent_at = "sent", utcnow()
    session.flush()
    return sent


def send_confirmation(session: Session, subscription_id: int, mail: compose.MailSettings) -> int:
    """The confirmation e-mail of a pending subscription (0 when it is confirmed or gone)."""
    sub = session.get(AlertSubscription, subscription_id)
    if sub is None or sub.confirmed_at is not None:
        return 0
    retainer = session.get(Retainer, sub.retainer_id)
    if retainer is None or not retainer.public_token:  # the page was disabled since: nothing to confirm on
        return 0
    when = alerts_when(settings_for(session, retainer).enabled, retainer.language)
    send(mail.smtp_url, build_message(compose.confirmation(session, sub, retainer, mail.public_url, when),
                                      mail.sender))
    return 1
