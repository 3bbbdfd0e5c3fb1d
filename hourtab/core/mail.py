"""Automatic e-mail over SMTP, with the standard library: the headers every automatic message carries
and the one transport both domains send through (hours alerts, the training watchdog's ``mailto:``).

Every message says it is automatic (``Auto-Submitted: auto-generated``, so auto-responders stay quiet).
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from urllib.parse import ParseResult, unquote, urlparse

from hourtab.core.db import utcnow
from hourtab.core.errors import InvalidInput


def automatic_message(to: str, subject: str, sender: str) -> EmailMessage:
    """A message with the headers every automatic e-mail carries."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = " ".join(subject.split())   # names and titles never break the header
    message["Date"] = format_datetime(utcnow())
    message["Message-ID"] = make_msgid(domain=_domain(sender))
    message["Auto-Submitted"] = "auto-generated"
    message["X-Auto-Response-Suppress"] = "All"
    return message


def plain_message(to: str, subject: str, body: str, sender: str) -> EmailMessage:
    """A plain-text automatic message (no template, no unsubscribe: the sender chose the address)."""
    message = automatic_message(to, subject, sender)
    message.set_content(body)
    return message


def _domain(sender: str) -> str:
    address = sender.rsplit("<", 1)[-1].rstrip(">")
    return address.rsplit("@", 1)[-1] or "localhost"


def check_url(url: str) -> ParseResult:
    """The parsed SMTP URL; anything but ``smtp``, ``smtp+starttls`` or ``smtps`` with a host is refused."""
    parsed = urlparse(url)
    if parsed.scheme not in ("smtp", "smtp+starttls", "smtps") or not parsed.hostname:
        raise InvalidInput("HOURTAB_SMTP_URL must look like smtp://host:25, smtp+starttls://host:587 "
                           "or smtps://host:465")
    return parsed


def send(url: str, message: EmailMessage, timeout: float = 30.0) -> None:
    """Send through ``smtp://``, ``smtp+starttls://`` or ``smtps://`` (user:password@ optional)."""
    parsed = check_url(url)
    host = parsed.hostname or ""  # check_url refuses a URL without a host
    client: smtplib.SMTP
    if parsed.scheme == "smtps":
        client = smtplib.SMTP_SSL(host, parsed.port or 465, timeout=timeout, context=ssl.create_default_context())
    else:
        client = smtplib.SMTP(host, parsed.port or 25, timeout=timeout)
    with client:
        if parsed.scheme == "smtp+starttls":
            client.starttls(context=ssl.create_default_context())
        if parsed.username:
            client.login(unquote(parsed.username), unquote(parsed.password or ""))
        client.send_message(message)
