"""What a consultant is told when a sync stops on its own: the "connection paused" e-mail.

Composed here, beside the runner that decides to pause, so the job handler only hands it on; sent
through the kernel's mail transport when e-mail is set up.
"""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.mail import plain_message, send
from hourtab.sync.clients import tracker
from hourtab.sync.runner import Outcome

log = logging.getLogger(__name__)


def tell_paused(session: Session, account_id: int, outcome: Outcome, *, smtp_url: str | None, public_url: str,
                sender: str) -> None:
    """Optional: with e-mail set up, the consultant learns at once that syncing stopped, and why."""
    account = session.get(Account, account_id) if smtp_url else None
    if account is None or not smtp_url:
        return
    label = tracker(outcome.tracker).label
    body = (f"HourTab paused your {label} connection, so your clients' pages no longer follow it.\n\n"
            f"{outcome.error}\n\nEnter the token again or resume the connection at "
            f"{public_url}/account/connections\n")
    try:
        send(smtp_url, plain_message(account.contact or account.email, f"HourTab paused your {label} connection",
                                     body, sender))
    except OSError:   # the pause itself is recorded and shown on the page; the e-mail is a courtesy
        log.warning("could not e-mail the consultant of connection %s", outcome.connection_id, exc_info=True)
