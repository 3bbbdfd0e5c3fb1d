"""Alert jobs: check a retainer's thresholds after an import, send each alert once, confirm subscriptions.

``alerts_check`` creates the due events (unique per retainer, alert and period, so a second import
creates nothing) and queues one ``alert_send`` per event; ``alert_send`` reserves each delivery in
the database before handing the message to SMTP.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.alerts import service as alerts
from hourtab.alerts.mail import Attachment, Mail, build_message
from hourtab.alerts.models import AlertEvent, AlertSubscription
from hourtab.core.accounts import Account
from hourtab.core.db import utcnow
from hourtab.core.jobs import Job
from hourtab.core.mail import send
from hourtab.retainers import service as retainers
from hourtab.retainers.headline import format_hours, headline
from hourtab.retainers.models import Retainer

log = logging.getLogger(__name__)

LEADS = {
    "used_80": "80 % of this period's hours are used.",
    "used_100": "All of this period's hours are used.",
    "overage": "This period's hours are used up, and more hours have been worked.",
    "period_closed": "The period has closed; its statement is attached.",
    "incident_published": "An incident report was published.",
}


def queue_alert_check(app: Flask, session: Session, account_id: int) -> None:
    """After an import: look for alerts due on the account's retainers (only when e-mail is set up)."""
    if not app.config.get("SMTP_URL"):
        return
    from app.jobs.handlers import start

    job = start(session, account_id, "alerts_check", {})
    app.extensions["hourtab.queue"].enqueue(job.id)


def queue_job(app: Flask, session: Session, account_id: int, kind: str, params: dict[str, Any]) -> None:
    """Create a job (committed) and hand it to the queue."""
    from app.jobs.handlers import start

    job = start(session, account_id, kind, params)
    app.extensions["hourtab.queue"].enqueue(job.id)


def check_alerts(app: Flask, session: Session, job: Job) -> dict[str, Any]:
    # Entries are routed to retainers in the transaction that brings them (imports, removals,
    # rule changes), so the ledger read here is already right.
    events = []
    for retainer in session.scalars(select(Retainer).where(Retainer.account_id == job.account_id,
                                                           Retainer.active.is_(True),
                                                           Retainer.public_token.is_not(None))):
        ledger = retainers.retainer_ledger(session, retainer, utcnow(), text=False)
        events += [e.id for e in alerts.due_events(session, retainer, ledger)]
    session.commit()
    for event_id in events:
        queue_job(app, session, job.account_id, "alert_send", {"event_id": event_id})
    return {"events": events}


def incident_alert(app: Flask, session: Session, job: Job) -> None:
    from incidents.writeups import service as incidents

    incident = incidents.get_incident(session, job.account_id, job.params["incident_id"])
    retainer = session.get(Retainer, incident.retainer_id) if incident.retainer_id else None
    if retainer is None or not retainer.public_token or not app.config.get("SMTP_URL"):
        return
    event = alerts.incident_event(session, retainer, incident.id, incident.title,
                                  f"/h/{retainer.public_token}/incidents/{incident.slug}")
    session.commit()
    if event is not None:
        queue_job(app, session, job.account_id, "alert_send", {"event_id": event.id})


def _subject(event: AlertEvent, name: str) -> str:
    return {
        "used_80": f"80 % of this period's hours used · {name}",
        "used_100": f"All of this period's hours used · {name}",
        "overage": f"Over this period's hours · {name}",
        "period_closed": f"{event.facts.get('period', 'Period')} closed: statement attached · {name}",
        "incident_published": f"Incident report published: {event.facts.get('title', '')} · {name}",
    }[event.alert]


def unsubscribe_url(app: Flask, token: str) -> str:
    """The subscription's own link: it keeps working when the public page's link is rotated."""
    return f"{app.config['PUBLIC_URL']}/alerts/unsubscribe/{token}"


def _from_consultant(session: Session, retainer: Retainer, info) -> dict[str, str]:
    """Sent as "<display name> via HourTab"; answers go to the contact address the client sees."""
    account = session.get(Account, retainer.account_id)
    return {"on_behalf_of": account.display_name if account else "", "reply_to": info.consultant_contact}


def send_alert(app: Flask, session: Session, job: Job) -> dict[str, Any]:
    event = session.get(AlertEvent, job.params["event_id"])
    retainer = session.get(Retainer, event.retainer_id) if event is not None else None
    if retainer is None or not retainer.public_token:
        return {"sent": 0}
    base = app.config["PUBLIC_URL"]
    page_url = f"{base}/h/{retainer.public_token}"
    info = retainers.retainer_info(session, retainer)
    ledger = retainers.retainer_ledger(session, retainer, utcnow(), text=event.alert == "period_closed")
    context = {"info": info, "lead": LEADS[event.alert], "page_url": page_url, "period": event.facts.get("period"),
               "headline": headline(ledger.current) if event.alert in ("used_80", "used_100", "overage") else
               f"{format_hours(event.facts['used_s'])} of {format_hours(event.facts['available_s'])} h used"
               if "used_s" in event.facts else "", "link": "", "link_text": ""}
    attachments: tuple[Attachment, ...] = ()
    if event.alert == "period_closed":
        from hourtab.statements import statement_pdf

        month = event.facts["month"]
        context.update(link=f"{page_url}/statement/{month}.pdf", link_text="Statement")
        attachments = (Attachment(f"statement-{month}.pdf", statement_pdf(info, ledger, month, utcnow())),)
    if event.alert == "incident_published":
        context.update(link=f"{base}{event.facts['path']}", link_text=event.facts.get("title", "Read it"))
    subject = _subject(event, info.name)
    sender = _from_consultant(session, retainer, info)
    sent = 0
    for r in alerts.recipients(session, retainer):
        delivery = alerts.reserve_delivery(session, event.id, r.key)
        if delivery is None:
            continue                                        # sent (or being sent) by an earlier attempt
        unsubscribe = unsubscribe_url(app, r.unsubscribe_token) if r.unsubscribe_token else ""
        mail = Mail(to=r.email, subject=("[Copy] " if r.is_copy else "") + subject, template="alert",
                    context={**context, "subject": subject, "is_copy": r.is_copy},
                    unsubscribe_url=unsubscribe, attachments=attachments, **sender)
        try:
            send(app.config["SMTP_URL"], build_message(mail, app.config["MAIL_FROM"]))
        except Exception:
            session.delete(delivery)        # refused or unreachable: a retry may send this one
            session.commit()
            raise
        delivery.sent_at = utcnow()
        session.commit()
        sent += 1
    event.status, event.sent_at = "sent", utcnow()
    session.commit()
    return {"sent": sent}


def send_confirmation(app: Flask, session: Session, job: Job) -> dict[str, Any]:
    sub = session.get(AlertSubscription, job.params["subscription_id"])
    if sub is None or sub.confirmed_at is not None:
        return {"sent": 0}
    retainer = session.get(Retainer, sub.retainer_id)
    if not retainer.public_token:          # the page was disabled since: nothing to confirm on
        return {"sent": 0}
    page_url = f"{app.config['PUBLIC_URL']}/h/{retainer.public_token}"
    info = retainers.retainer_info(session, retainer)
    subject = f"Confirm hour alerts for {info.name}"
    when = alerts.alerts_when(alerts.settings_for(session, retainer).enabled)
    mail = Mail(to=sub.email, subject=subject, template="confirm",
                context={"info": info, "subject": subject, "alerts_when": when,
                         "confirm_url": f"{page_url}/alerts/confirm/{sub.token}"},
                unsubscribe_url=unsubscribe_url(app, sub.token), **_from_consultant(session, retainer, info))
    send(app.config["SMTP_URL"], build_message(mail, app.config["MAIL_FROM"]))
    return {"sent": 1}
