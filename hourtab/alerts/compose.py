"""What each alert e-mail says: its subject, lead, figures, links and attachment, from the records.

The message itself (headers, text and HTML parts) is built by :mod:`hourtab.alerts.message`; this
module decides the content, once per event, and addresses a copy to each recipient.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypedDict

from sqlalchemy.orm import Session

from hourtab.alerts.message import Attachment, Mail
from hourtab.alerts.models import AlertEvent, AlertSubscription
from hourtab.core.accounts import Account
from hourtab.core.i18n import N_, Writer, writer
from hourtab.retainers import ledger_reads
from hourtab.retainers.currency import format_money
from hourtab.retainers.hours_report import RetainerInfo
from hourtab.retainers.ledger import Ledger
from hourtab.retainers.models import Retainer
from hourtab.retainers.presentation import headline, hours_formatter
from hourtab.retainers.pricing import price_period
from hourtab.retainers.totals import no_periods
from hourtab.statements import month_periods, statement_pdf

LEADS = {
    "used_80": N_("80 % of this period's hours are used."),
    "used_100": N_("All of this period's hours are used."),
    "overage": N_("This period's hours are used up, and more hours have been worked."),
    "period_closed": N_("The period has closed; its statement is attached."),
    "incident_published": N_("An incident report was published."),
}
SUBJECTS = {
    "used_80": N_("80 %% of this period's hours used · %(name)s"),
    "used_100": N_("All of this period's hours used · %(name)s"),
    "overage": N_("Over this period's hours · %(name)s"),
    "period_closed": N_("%(period)s closed: statement attached · %(name)s"),
    "incident_published": N_("Incident report published: %(title)s · %(name)s"),
}


@dataclass(frozen=True)
class MailSettings:
    public_url: str     # the app's public base URL: every link in an e-mail starts with it
    smtp_url: str
    sender: str


class Sender(TypedDict):
    """``on_behalf_of`` and ``reply_to`` of :class:`Mail`: whose message it is, where answers go."""

    on_behalf_of: str
    reply_to: str


@dataclass(frozen=True)
class Draft:
    """One event's e-mail, before it is addressed."""

    subject: str
    context: dict
    public_url: str
    sender: Sender
    attachments: tuple[Attachment, ...] = field(default=())
    language: str = "en"

    def to(self, email: str, unsubscribe_token: str, is_copy: bool) -> Mail:
        """The copy for one recipient (the consultant's copy has no unsubscribe link)."""
        unsubscribe = unsubscribe_url(self.public_url, unsubscribe_token) if unsubscribe_token else ""
        return Mail(to=email, subject=("[Copy] " if is_copy else "") + self.subject, template="alert",
                    context={**self.context, "subject": self.subject, "is_copy": is_copy},
                    unsubscribe_url=unsubscribe, attachments=self.attachments, language=self.language,
                    **self.sender)


def unsubscribe_url(public_url: str, token: str) -> str:
    """The subscription's own link: it keeps working when the public page's link is rotated."""
    return f"{public_url}/alerts/unsubscribe/{token}"


def from_consultant(session: Session, retainer: Retainer, info: RetainerInfo) -> Sender:
    """Sent as "<display name> via HourTab"; answers go to the contact address the client sees."""
    account = session.get(Account, retainer.account_id)
    return Sender(on_behalf_of=account.display_name if account else "", reply_to=info.consultant_contact)


def subject(event: AlertEvent, name: str, w: Writer | None = None, period: str | None = None) -> str:
    """``period``: the event's period as the client's language writes it (default: as recorded)."""
    w = w or Writer()
    return w.gettext(SUBJECTS[event.alert]) % {
        "name": name, "period": period or event.facts.get("period", w.gettext("Period")),
        "title": event.facts.get("title", "")}


def _period_said(ledger: Ledger, facts: dict, w: Writer) -> str | None:
    """The event's period (recorded by its English label) in the client's language; ``None`` if gone."""
    found = [p.period for p in ledger.periods if p.period.label == facts.get("period")]
    return w.period(found[0]) if found else facts.get("period")


def alert_draft(session: Session, event: AlertEvent, retainer: Retainer, public_url: str,
                now: dt.datetime) -> Draft:
    """The e-mail for ``event``: the figures as of ``now``, the closed period's statement attached."""
    page_url = f"{public_url}/h/{retainer.public_token}"
    info = ledger_reads.retainer_info(session, retainer)
    statement = event.alert == "period_closed"
    ledger = ledger_reads.retainer_ledger(session, retainer, now,
                                       entries=month_periods(event.facts["month"]) if statement else no_periods)
    facts = event.facts
    # In the consultant's unit, as the page and the statement write the same figures.
    h = hours_formatter(info.hours_unit)
    w = writer(info.language)
    if event.alert in ("used_80", "used_100", "overage"):
        line = headline(ledger.current, info.hours_unit, w)
    else:
        line = w.gettext("%(used)s of %(available)s h used") % {
            "used": h(facts["used_s"]), "available": h(facts["available_s"])} if "used_s" in facts else ""
    period = _period_said(ledger, facts, w)
    context = {"info": info, "lead": w.gettext(LEADS[event.alert]), "page_url": page_url,
               "period": period, "headline": line, "link": "", "link_text": "",
               "amounts": amounts_line(ledger, event, w)}
    attachments: tuple[Attachment, ...] = ()
    if event.alert == "period_closed":
        month = facts["month"]
        context.update(link=f"{page_url}/statement/{month}.pdf", link_text=w.gettext("Statement"))
        attachments = (Attachment(f"statement-{month}.pdf", statement_pdf(info, ledger, month, now)),)
    if event.alert == "incident_published":
        context.update(link=f"{public_url}{facts['path']}", link_text=facts.get("title", w.gettext("Read it")))
    return Draft(subject(event, info.name, w, period), context, public_url, from_consultant(session, retainer, info),
                 attachments, info.language)


def amounts_line(ledger: Ledger, event: AlertEvent, w: Writer | None = None) -> str:
    """``Used: €1,875.00 · Remaining: €1,125.00`` for the alert's period ("" when it is sold in hours only):
    the current period for the thresholds, the closed one for ``period_closed``."""
    index = ledger.current_index
    if event.alert == "period_closed":
        found = [i for i, p in enumerate(ledger.periods) if p.period.label == event.facts.get("period")]
        if not found:
            return ""
        index = found[0]
    money = price_period(ledger.periods[index], ledger.period_credits(index))
    if money is None:
        return ""
    w = w or Writer()

    def said(label: str, amount: Decimal) -> str:
        return w.gettext(label) % {"amount": format_money(amount, money.currency, w.language)}

    parts = [] if money.fee is None else [said(N_("Fee: %(amount)s"), money.fee)]
    if money.used is not None and money.remaining is not None:
        parts += [said(N_("Used: %(amount)s"), money.used), said(N_("Remaining: %(amount)s"), money.remaining)]
    if money.overage:
        parts.append(said(N_("Overage to bill: %(amount)s"), money.overage))
    return " · ".join(parts)


def confirmation(session: Session, sub: AlertSubscription, retainer: Retainer, public_url: str,
                 alerts_when: str) -> Mail:
    """The double opt-in e-mail: nothing else is sent to the address until its link is used."""
    info = ledger_reads.retainer_info(session, retainer)
    title = writer(info.language).gettext("Confirm hour alerts for %(name)s") % {"name": info.name}
    return Mail(to=sub.email, subject=title, template="confirm", language=info.language,
                context={"info": info, "subject": title, "alerts_when": alerts_when,
                         # The subscription's own address: rotating the page's link must not break it.
                         "confirm_url": f"{public_url}/alerts/confirm/{sub.token}"},
                unsubscribe_url=unsubscribe_url(public_url, sub.token), **from_consultant(session, retainer, info))
