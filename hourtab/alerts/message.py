"""Alert e-mails: plain text and HTML from one template pair, sent through the kernel's transport.

Every alert carries a one-click unsubscribe (RFC 8058: ``List-Unsubscribe`` with an https link and
``List-Unsubscribe-Post``), which is also the link in the body. The message comes from
"<consultant> via HourTab" at the operator's address (``HOURTAB_MAIL_FROM``: the domain whose
SPF and DKIM the operator controls) and answers go to the consultant (``Reply-To``).

URL headers go out as written, in ASCII: the standard library folds a header longer than 78
characters and, when a long URL gives it nowhere to fold, writes it as an RFC 2047 encoded word
(``=?utf-8?q?=3Chttps…``), which no mail client reads as a link. Headers of these messages fold
only past RFC 5322's hard limit of 998 characters instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formataddr, parseaddr
from urllib.parse import quote, urlsplit, urlunsplit

from hourtab.core.documents import render
from hourtab.core.i18n import writer
from hourtab.core.mail import automatic_message
from hourtab.core.values import single_line

#: RFC 5322 §2.1.1: a line MUST NOT exceed 998 characters.
MAX_LINE = 998


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
    #: Whose message it is ("<name> via HourTab"); empty: the operator's sender as configured.
    on_behalf_of: str = ""
    #: Where answers go (the consultant's contact address); empty: no Reply-To.
    reply_to: str = ""
    #: The client's language (``hourtab.core.i18n.LANGUAGES``): the templates' words are in it.
    language: str = "en"


def sender(mail_from: str, on_behalf_of: str) -> str:
    """``"Ada Lovelace via HourTab" <alerts@host>``: the operator's address, the consultant's name."""
    name, address = parseaddr(mail_from)
    person = single_line(on_behalf_of)
    if not person or not address:
        return mail_from
    return formataddr((f"{person} via {name or 'HourTab'}", address))


def ascii_url(url: str) -> str:
    """The URL in ASCII as a header must carry it: an IDNA host, percent-encoded path and query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        host = host.encode("idna").decode("ascii")
    if ":" in host:                       # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    safe = "/:@!$&'()*+,;=-._~%"
    return urlunsplit((parts.scheme, netloc, quote(parts.path, safe=safe), quote(parts.query, safe=safe + "?"),
                       quote(parts.fragment, safe=safe)))


def build_message(mail: Mail, mail_from: str) -> EmailMessage:
    context = {**writer(mail.language).template_context(), **mail.context, "unsubscribe_url": mail.unsubscribe_url}
    message = automatic_message(mail.to, mail.subject, sender(mail_from, mail.on_behalf_of))
    if mail.reply_to:
        message["Reply-To"] = mail.reply_to
    if mail.unsubscribe_url:
        message["List-Unsubscribe"] = f"<{ascii_url(mail.unsubscribe_url)}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(render(f"email/{mail.template}.txt", **context))
    message.add_alternative(render(f"email/{mail.template}.html", **context),
                            subtype="html")
    for a in mail.attachments:
        message.add_attachment(a.data, maintype=a.maintype, subtype=a.subtype, filename=a.filename)
    # Headers are folded when the message is written out, with the message's policy; the bodies are
    # encoded already (as before: quoted-printable where a line is long), so only headers change.
    message.policy = message.policy.clone(max_line_length=MAX_LINE)
    return message
