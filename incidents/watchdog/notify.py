"""Where watchdog alerts go: standard output or a webhook (JSON POST).

E-mail is not offered yet: HourTab has no mailer; when one exists, it becomes a third target here.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from incidents.errors import InvalidEvidence

Alert = dict[str, Any]


class NotifyTargetInvalid(InvalidEvidence):
    """A ``--notify`` value that is neither ``stdout`` nor an http(s) URL."""


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


def targets(values: tuple[str, ...]) -> list[tuple[str, Callable[[Alert], str | None] | None]]:
    """``stdout`` or an http(s) URL each; stdout (None) is printed by the caller in its own format."""
    out: list[tuple[str, Callable[[Alert], str | None] | None]] = []
    for value in values or ("stdout",):
        if value == "stdout":
            out.append((value, None))
        elif value.startswith(("http://", "https://")):
            out.append((value, webhook(value)))
        else:
            raise NotifyTargetInvalid(f"--notify takes stdout or an http(s) webhook URL, not {value!r} "
                                      "(e-mail alerts are not available yet).")
    return out
