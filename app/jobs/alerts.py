"""Alert jobs: check the thresholds after an import, send each alert once, confirm subscriptions.

``alerts_check`` creates the due events (unique per retainer, alert and period, so a second import
creates nothing) and one ``alert_send`` job per event; ``alert_send`` delivers it, each recipient
reserved before the message goes to SMTP (``hourtab.alerts.service.deliver``).
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy.orm import Session

from app.jobs.broker import Queue, start
from hourtab.alerts import service as alerts
from hourtab.alerts.compose import MailSettings
from hourtab.core.blobs import BlobStore
from hourtab.core.db import utcnow
from hourtab.core.jobrunner import checkpoint
from hourtab.core.jobs import Job, create_job
from incidents.writeups import published


def queue_alert_check(app: Flask, session: Session, account_id: int) -> None:
    """After an import: look for alerts due on the account's retainers (only when e-mail is set up)."""
    if app.config.get("SMTP_URL"):
        app.extensions["hourtab.queue"].enqueue(start(session, account_id, "alerts_check", {}).id)


def register(app: Flask, queue: Queue) -> None:
    cfg = app.config
    mail = MailSettings(cfg["PUBLIC_URL"], cfg.get("SMTP_URL", ""), cfg["MAIL_FROM"])
    blobs: BlobStore = app.extensions["hourtab.blobs"]

    def alerts_check(session: Session, job: Job) -> dict[str, Any]:
        events = [e.id for e in alerts.due_alerts(session, job.account_id, utcnow())]
        for event_id in events:
            create_job(session, job.account_id, "alert_send", {"event_id": event_id})
        return {"events": events}

    def alert_send(session: Session, job: Job) -> dict[str, Any]:
        return {"sent": alerts.deliver(session, job.params["event_id"], mail, durable=lambda: checkpoint(session))}

    def alert_confirm(session: Session, job: Job) -> dict[str, Any]:
        return {"sent": alerts.send_confirmation(session, job.params["subscription_id"], mail)}

    def incident_publish(session: Session, job: Job) -> dict[str, Any]:
        """The public page and PDF rendered where the client's page reads them, then the alert."""
        incident = published.prerender(session, job.account_id, job.params["incident_id"], blobs,
                                       job.params.get("public_url", ""))
        event = alerts.incident_published(session, incident.retainer_id, incident.id, incident.title,
                                          incident.slug) if mail.smtp_url else None
        if event is not None:
            create_job(session, job.account_id, "alert_send", {"event_id": event.id})
        return {"incident_id": incident.id}

    queue.register("alerts_check", alerts_check, "Checking hour alerts", 300)
    queue.register("alert_send", alert_send, "Sending an alert", 300)
    queue.register("alert_confirm", alert_confirm, "Sending a confirmation e-mail", 120)
    queue.register("incident_publish", incident_publish, "Preparing the published writeup", 600)
