"""Where watchdog alerts go: standard output, a webhook (JSON POST), or e-mail through the alerts' mailer.

E-mail goes out through the SMTP server the alert e-mails use (``HOURTAB_SMTP_URL``), as plain text
marked automatic (``Auto-Submitted: auto-generated``) like every alert HourTab sends.
"""

from __future__ import annotations

import json
import re
import smtplib
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from hourtab.core.mail import check_url, plain_message
from hourtab.core.mail import send as send_mail
from incidents.errors import InvalidEvidence

Alert = dict[str, Any]


class NotifyTargetInvalid(InvalidEvidence):
    """A ``--notify`` value that is not ``stdout``, an http(s) URL or ``mailto:``/``email:`` an address."""


#: One address, nothing a header could be split on (no spaces, commas or line breaks).
_ADDRESS = re.compile(r"[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+")


def alert_text(alert: Alert) -> str:
    """The alert as lines for a terminal or a chat message."""
    return (f"[hourtab watchdog] {alert['rule']} fired on run {alert['run_id']} at step {alert['at_step']}: "
            f"{alert['verdict']}\n  start a draft incident: {alert['draft_incident']}\n  ({alert['draft_note']})")


def webhook(url: str, timeout: float = 10.0) -> Callable[[Alert], str | None]:
    """POST the alert as JSON (with a ``text`` field chat services display); returns an error or None."""

    def send(alert: Alert) -> str | None:
        body = json.dumps({**alert, "text": alert_text(alert)}, default=str).encode()
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http(s) checked
                response.read()
        except (urllib.error.URLError, OSError) as e:
            return f"webhook {url} failed: {getattr(e, 'reason', e)}"
        return None

    return send


def email(address: str, smtp_url: str, sender: str, timeout: float = 30.0) -> Callable[[Alert], str | None]:
    """Mail the alert's text to ``address``; returns an error or None."""
    def send(alert: Alert) -> str | None:
        subject = f"[hourtab watchdog] {alert['rule'].replace('_', ' ')} on W&B run {alert['run_id']}"
        try:
            send_mail(smtp_url, plain_message(address, subject, alert_text(alert) + "\n", sender), timeout)
        except (smtplib.SMTPException, OSError) as e:
            return f"e-mail to {address} failed: {e}"
        return None

    return send


def targets(values: tuple[str, ...], smtp_url: str = "",
            sender: str = "HourTab <hourtab@localhost>") -> list[tuple[str, Callable[[Alert], str | None] | None]]:
    """``stdout``, an http(s) URL or ``mailto:``/``email:`` an address each; stdout (None) is printed by
    the caller in its own format. E-mail needs ``smtp_url`` (``HOURTAB_SMTP_URL``)."""
    out: list[tuple[str, Callable[[Alert], str | None] | None]] = []
    for value in values or ("stdout",):
        scheme, _, address = value.partition(":")
        if value == "stdout":
            out.append((value, None))
        elif value.startswith(("http://", "https://")):
            out.append((value, webhook(value)))
        elif scheme in ("mailto", "email") and _ADDRESS.fullmatch(address):
            if not smtp_url:
                raise NotifyTargetInvalid(f"--notify {scheme}: needs HOURTAB_SMTP_URL (the SMTP server alert "
                                          "e-mails go through), and it is not set.")
            check_url(smtp_url)
            out.append((value, email(address, smtp_url, sender)))
        else:
            raise NotifyTargetInvalid(f"--notify takes stdout, an http(s) webhook URL or mailto:ADDRESS, "
                                      f"not {value!r}.")
    return out
