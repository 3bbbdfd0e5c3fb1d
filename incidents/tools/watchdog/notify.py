"""Where watchdog alerts go: standard output, a webhook (JSON POST), or e-mail through the alerts' mailer.

E-mail goes out through the SMTP server the alert e-mails use (``HOURTAB_SMTP_URL``), as plain text
marked automatic (``Auto-Submitted: auto-generated``) like every alert HourTab sends.

A webhook is one POST to the URL given and nothing else: a redirect is not followed (a 3xx means the
alert was not delivered — following it once sent the alert as a GET to another address and counted
it delivered), only a 2xx answer counts, the whole exchange has a deadline (a server that drips its
answer a byte at a time is cut off, not waited on), and at most ``MAX_RESPONSE`` bytes of the answer
are read. A URL with a line break, a control character, no host or a bad port is refused up front.
Messages name the webhook by scheme, host and port only: its path often holds a secret token.
"""

from __future__ import annotations

import http.client
import json
import re
import smtplib
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult, urlsplit

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


#: Bytes of a webhook's answer read at most (the answer is not used; this bounds memory, not meaning).
MAX_RESPONSE = 64 * 1024
#: Seconds the whole exchange with a webhook may take: connect, send, status line, headers, answer.
WEBHOOK_TIMEOUT = 10.0


def check_webhook(url: str) -> SplitResult:
    """The parsed URL of an http(s) webhook, or :class:`NotifyTargetInvalid` saying what is wrong with it."""
    bad = next((i for i, c in enumerate(url) if ord(c) <= 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        kind = "a line break" if url[bad] in "\r\n" else "a space" if url[bad] == " " else "a control character"
        raise NotifyTargetInvalid(f"--notify URL has {kind} at character {bad + 1}; refusing it.")
    if not url.isascii():
        raise NotifyTargetInvalid("--notify URL has characters beyond ASCII; percent-encode them.")
    try:   # urlsplit itself refuses some hosts, e.g. an unclosed IPv6 bracket ("http://[::1/")
        parts = urlsplit(url)
    except ValueError as e:
        raise NotifyTargetInvalid("--notify URL must be http(s)://host[:port]/path with a valid host and port.") from e
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise NotifyTargetInvalid("--notify URL must be http(s)://host[:port]/path with a valid host and port.")
    if parts.username is not None or parts.password is not None:
        raise NotifyTargetInvalid("--notify URL must not carry user:password@ (it would not be sent); put the "
                                  "webhook's token in its path or query.")
    return parts


def _where(parts: SplitResult) -> str:
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def _abort(connection: http.client.HTTPConnection, aborted: threading.Event) -> None:
    """At the deadline: shut the socket down under the blocked read (socket.socket's own shutdown, so a
    TLS socket is cut at the transport rather than unwrapped from another thread)."""
    aborted.set()
    sock = connection.sock
    if sock is not None:
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


def post(parts: SplitResult, body: bytes, timeout: float = WEBHOOK_TIMEOUT,
         max_response: int = MAX_RESPONSE) -> str | None:
    """POST ``body`` once; None when the webhook answered 2xx, else why the alert was not delivered."""
    where = _where(parts)
    if not parts.hostname:
        return f"{where}: no host to post to"
    if parts.scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    aborted = threading.Event()
    deadline = threading.Timer(timeout, _abort, (connection, aborted))
    deadline.daemon = True
    deadline.start()
    try:
        connection.request("POST", target, body=body, headers={
            "Content-Type": "application/json", "User-Agent": "hourtab-watchdog"})
        response = connection.getresponse()
        response.read(max_response)
        status, reason = response.status, response.reason
    except (OSError, http.client.HTTPException, ValueError) as e:
        if aborted.is_set():
            return f"webhook {where} did not answer within {timeout:g} s: the alert was not delivered"
        return f"webhook {where} failed ({type(e).__name__}: {e}): the alert was not delivered"
    finally:
        deadline.cancel()
        connection.close()
    if aborted.is_set():
        return f"webhook {where} did not answer within {timeout:g} s: the alert was not delivered"
    if 300 <= status < 400:
        return (f"webhook {where} answered {status} {reason} (a redirect, which is not followed): the alert was "
                "not delivered")
    if not 200 <= status < 300:
        return f"webhook {where} answered {status} {reason}: the alert was not delivered"
    return None


def webhook(url: str, timeout: float = WEBHOOK_TIMEOUT) -> Callable[[Alert], str | None]:
    """POST the alert as JSON (with a ``text`` field chat services display); returns an error or None."""
    parts = check_webhook(url)

    def send(alert: Alert) -> str | None:
        return post(parts, json.dumps({**alert, "text": alert_text(alert)}, default=str).encode(), timeout)

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


def notify_targets(values: tuple[str, ...], smtp_url: str = "",
            sender: str = "HourTab <hourtab@localhost>") -> list[tuple[str, Callable[[Alert], str | None] | None]]:
    """``stdout``, an http(s) URL or ``mailto:``/``email:`` an address each; stdout (None) is printed by
    the caller in its own format. E-mail needs ``smtp_url`` (``HOURTAB_SMTP_URL``)."""
    out: list[tuple[str, Callable[[Alert], str | None] | None]] = []
    for value in values or ("stdout",):
        scheme, _, address = value.partition(":")
        if value == "stdout":
            out.append((value, None))
        elif value.lower().startswith(("http://", "https://")):
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
