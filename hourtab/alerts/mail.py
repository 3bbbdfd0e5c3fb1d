"""Alert e-mails: plain text and HTML from one template pair, sent with the standard library.

Every message says it is automatic (``Auto-Submitted: auto-generated``, so auto-responders stay
quiet) and carries a one-click unsubscribe (RFC 8058: ``List-Unsubscribe`` with an https link and
``List-Unsubscribe-Post``), which is also the link in the body.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from functools import cache
from pathlib import Path
from urllib.parse import ParseResult, unquote, urlparse

from jinja2 import Environment, FileSystemLoader, select_autoescape

from hourtab.db import utcnow
from hourtab.errors import InvalidInput

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


@dataclass(frozen=True)
class Attachment:
    filename: str
    data: bytes
    maintype: str = "application"
    subtype: str = "pdf"


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    template: str                 # email/<template>.txt and email/<template>.html
    context: dict
    unsubscribe_url: str = ""
    attachments: tuple[Attachment, ...] = field(default=())


@cache
def _env(autoescape: bool) -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(
        enabled_extensions=("html",), default_for_string=autoescape, default=autoescape),
        trim_blocks=True, lstrip_blocks=True)


def _automatic(to: str, subject: str, sender: str) -> EmailMessage:
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
    message = _automatic(to, subject, sender)
    message.set_content(body)
    return message


def build_message(mail: Mail, sender: str) -> EmailMessage:
    context = {**mail.context, "unsubscribe_url": mail.unsubscribe_url}
    message = _automatic(mail.to, mail.subject, sender)
    if mail.unsubscribe_url:
        message["List-Unsubscribe"] = f"<{mail.unsubscribe_url}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(_env(False).get_template(f"email/{mail.template}.txt").render(**context))
    message.add_alternative(_env(True).get_template(f"email/{mail.template}.html").render(**context),
                            subtype="html")
    for a in mail.attachments:
        message.add_attachment(a.data, maintype=a.maintype, subtype=a.subtype, filename=a.filename)
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
    if parsed.scheme == "smtps":
        client = smtplib.SMTP_SSL(parsed.hostname, parsed.port or 465, timeout=timeout,
                                  context=ssl.create_default_context())
    else:
        client = smtplib.SMTP(parsed.hostname, parsed.port or 25, timeout=timeout)
    with client:
        if parsed.scheme == "smtp+starttls":
            client.starttls(context=ssl.create_default_context())
        if parsed.username:
            client.login(unquote(parsed.username), unquote(parsed.password or ""))
        client.send_message(message)
