"""Alert e-mails: plain text and HTML from one template pair, sent through the kernel's transport.

Every alert carries a one-click unsubscribe (RFC 8058: ``List-Unsubscribe`` with an https link and
``List-Unsubscribe-Post``), which is also the link in the body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import EmailMessage
from functools import cache

from jinja2 import Environment, FileSystemLoader, select_autoescape

from hourtab.core.mail import automatic_message
from hourtab.core.resources import documents_dir


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
    return Environment(loader=FileSystemLoader(documents_dir()), autoescape=select_autoescape(
        enabled_extensions=("html",), default_for_string=autoescape, default=autoescape),
        trim_blocks=True, lstrip_blocks=True)


def build_message(mail: Mail, sender: str) -> EmailMessage:
    context = {**mail.context, "unsubscribe_url": mail.unsubscribe_url}
    message = automatic_message(mail.to, mail.subject, sender)
    if mail.unsubscribe_url:
        message["List-Unsubscribe"] = f"<{mail.unsubscribe_url}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(_env(False).get_template(f"email/{mail.template}.txt").render(**context))
    message.add_alternative(_env(True).get_template(f"email/{mail.template}.html").render(**context),
                            subtype="html")
    for a in mail.attachments:
        message.add_attachment(a.data, maintype=a.maintype, subtype=a.subtype, filename=a.filename)
    return message
