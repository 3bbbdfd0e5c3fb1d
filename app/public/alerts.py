"""Alert subscriptions from the client's page: subscribe, confirm (double opt-in), one-click unsubscribe.

Confirmation and unsubscribe links name the subscription only (``/alerts/confirm/<token>``,
``/alerts/unsubscribe/<token>``), so rotating or disabling the page's link neither breaks a
confirmation already sent nor strands an address; links sent under ``/h/<page token>/…`` are
answered by the subscription token too. No page here shows the address, nor the page's link.

These forms carry no CSRF token: the pages are cached and cookie-free, a forged subscription only
sends a confirmation request, and RFC 8058 one-click unsubscribes are POSTed by mail clients that
hold no token. Each GET only shows a button; the
change happens on POST (so link scanners that prefetch cannot confirm or unsubscribe anyone).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from flask import current_app, render_template, request
from flask.typing import ResponseReturnValue
from sqlalchemy.orm import Session

from app.db import get_db
from app.jobs import queue_job
from app.public import bp
from app.public.hours import _miss
from app.security import csrf
from hourtab.alerts import service as alerts
from hourtab.core import ratelimit
from hourtab.core.accounts import login_key
from hourtab.core.db import transaction
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.i18n import N_, writer
from hourtab.retainers import service as retainers
from hourtab.retainers.models import Retainer

SUBSCRIBE_LIMIT = 5


def _retainer(token: str) -> Retainer:
    if not current_app.config.get("SMTP_URL"):
        raise _miss()
    try:
        return retainers.by_token(get_db(), token)
    except NotFound:
        raise _miss() from None


def _page(retainer: Retainer | None, token: str, title: str, message: str, *, status: int = 200, action: str = "",
          button: str = "", error: bool = False) -> ResponseReturnValue:
    """``token``: the page's link to go back to ("" on pages reached by a subscription's own link)."""
    w = writer(retainer.language if retainer else None)
    # ``title``, ``message`` and ``button`` are messages marked N_ (an error's text is said as it is).
    html = render_template("public/alerts.html", name=retainer.name if retainer else "HourTab",
                           base=f"/h/{token}" if token else "", title=w.gettext(title),
                           message=message if error else w.gettext(message), action=action,
                           button=w.gettext(button) if button else "", error=error, **w.template_context())
    return html, status


@bp.route("/h/<token>/alerts", methods=["POST"])
@csrf.exempt
def alerts_subscribe(token: str) -> ResponseReturnValue:
    db = get_db()
    retainer = _retainer(token)
    # Each request may send a confirmation e-mail: a few per address and per client address an hour.
    # The address in the one spelling log-ins are limited by, so Unicode spellings of a domain
    # (full-width letters, capitals) count against one inbox.
    address = login_key(request.form.get("email", ""))
    keys = [f"ip:{request.remote_addr}", "to:" + hashlib.sha256(address.encode()).hexdigest()[:32]]
    with transaction(db):
        ratelimit.check(db, "alert-subscribe", keys, SUBSCRIBE_LIMIT, 3600)
        ratelimit.record(db, "alert-subscribe", keys, 3600)
    try:
        with transaction(db):
            pending = alerts.subscribe(db, retainer, request.form.get("email", ""))
    except InvalidInput as e:
        return _page(retainer, token, N_("E-mail alerts"), str(e), status=400, error=True)
    if pending is not None:
        queue_job(db, retainer.account_id, "alert_confirm", {"subscription_id": pending.id})
    return _page(retainer, token, N_("Check your inbox"),
                 N_("If this address is not subscribed yet, a confirmation e-mail is on its way. "
                    "Nothing else is sent until you confirm."))


@bp.route("/alerts/confirm/<sub>", methods=["GET", "POST"])
@csrf.exempt
def alerts_confirm(sub: str) -> ResponseReturnValue:
    """GET shows the button; POST confirms the subscription the link names."""
    return _subscription_link(sub, CONFIRM)


@bp.route("/h/<token>/alerts/confirm/<sub>", methods=["GET", "POST"])
@csrf.exempt
def alerts_confirm_under_page(token: str, sub: str) -> ResponseReturnValue:
    """Links sent before confirmations had their own address: the page token no longer matters."""
    return alerts_confirm(sub)


@bp.route("/alerts/unsubscribe/<sub>", methods=["GET", "POST"])
@csrf.exempt
def alerts_unsubscribe(sub: str) -> ResponseReturnValue:
    """GET shows the button; POST (the button, or a mail client's RFC 8058 one-click) removes the address."""
    return _subscription_link(sub, UNSUBSCRIBE)


@dataclass(frozen=True)
class _LinkStep:
    """A subscription link's page: what its GET asks, what its POST does, and what it says after
    (the texts are messages marked N_, translated where the page is written)."""

    ask_title: str
    ask_message: str
    button: str
    act: Callable[[Session, str], object]
    done_title: str
    done_message: str


CONFIRM = _LinkStep(N_("Confirm e-mail alerts"), N_("Press the button to start the alerts."), N_("Confirm"),
                    alerts.confirm, N_("Alerts confirmed"), N_("You will get this retainer's hour alerts by e-mail."))
UNSUBSCRIBE = _LinkStep(N_("Stop e-mail alerts"), N_("Press the button to stop the alerts and remove this address."),
                        N_("Unsubscribe"), alerts.unsubscribe_by_token, N_("Unsubscribed"),
                        N_("This address was removed; no more alerts will be sent to it."))


def _subscription_link(sub: str, step: _LinkStep) -> ResponseReturnValue:
    db = get_db()
    try:
        subscription = alerts.by_subscription_token(db, sub)
    except NotFound as e:
        return _page(None, "", N_("E-mail alerts"), str(e), status=404, error=True)
    retainer = db.get(Retainer, subscription.retainer_id)
    if request.method == "GET":
        return _page(retainer, "", step.ask_title, step.ask_message, action=request.path, button=step.button)
    with transaction(db):
        step.act(db, sub)
    return _page(retainer, "", step.done_title, step.done_message)


@bp.route("/h/<token>/alerts/unsubscribe/<sub>", methods=["GET", "POST"])
@csrf.exempt
def alerts_unsubscribe_under_page(token: str, sub: str) -> ResponseReturnValue:
    """Links sent before unsubscribe links had their own address: the page token no longer matters."""
    return alerts_unsubscribe(sub)
