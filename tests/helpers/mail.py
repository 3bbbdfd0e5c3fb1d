"""A real SMTP server for the tests (aiosmtpd on a free loopback port) that keeps what it receives."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from contextlib import contextmanager
from html import unescape

#: The public URL an app that mails puts in its links, and the sender it names.
PUBLIC_URL = "https://hours.example.com"
MAIL_FROM = "HourTab <alerts@hours.example.com>"


class Sink:
    """An aiosmtpd handler that keeps every message it is given, parsed (``raw_bytes``: as it came)."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        message.raw_bytes = envelope.original_content
        self.messages.append((list(envelope.rcpt_tos), message))
        return "250 OK"

    def to(self, address: str) -> list[email.message.EmailMessage]:
        return [m for rcpt, m in self.messages if address in rcpt]



@contextmanager
def smtp_server() -> Iterator[tuple[Sink, str]]:
    """``(sink, smtp://127.0.0.1:port)`` for as long as the block runs."""
    from aiosmtpd.controller import Controller

    from tests.helpers.servers import free_port

    sink = Sink()
    controller = Controller(sink, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield sink, f"smtp://127.0.0.1:{controller.port}"
    finally:
        controller.stop()


def header_line(raw: bytes, name: str) -> bytes:
    """The header's value exactly as sent (folded lines joined), from the message's bytes."""
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    unfolded = head.replace(b"\r\n", b"\n").replace(b"\n ", b" ").replace(b"\n\t", b"\t")
    for line in unfolded.split(b"\n"):
        if line.lower().startswith(name.lower().encode() + b":"):
            return line.split(b":", 1)[1].strip()
    raise KeyError(name)


def mailing(smtp_url: str, public_url: str = PUBLIC_URL) -> dict[str, str]:
    """The settings of an app that mails through ``smtp_url`` (for ``make_app(**mailing(url))``)."""
    return {"HOURTAB_SMTP_URL": smtp_url, "HOURTAB_PUBLIC_URL": public_url, "HOURTAB_MAIL_FROM": MAIL_FROM}


def alert_text(sink: Sink, subject: str) -> tuple[str, str]:
    """The plain and HTML bodies of the consultant's one alert whose subject has ``subject``."""
    found = [m for m in sink.to("consultant@example.com") if subject in m["Subject"]]
    assert len(found) == 1
    return found[0].get_body(("plain",)).get_content(), unescape(found[0].get_body(("html",)).get_content())
