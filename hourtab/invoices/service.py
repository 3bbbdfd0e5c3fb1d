"""Invoicing services: the consultant's details, a retainer's client details, issuing and rendering.

Each takes the session and never commits. ``issue_invoice`` gives the next number of the account
under the account's lock (the unique constraint is the last word), and issuing a month already
invoiced returns that invoice: a number is never given twice nor changed. The PDF is rendered from
the ledger as it stands, so a month revised since it was issued prints the revision and the total
it had when issued beside the number it kept.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account, lock_account
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.scoping import get_owned, select_owned
from hourtab.core.values import xml_safe
from hourtab.invoices.lines import InvoiceFigures, invoice_figures
from hourtab.invoices.models import Invoice, InvoiceClient, InvoiceProfile
from hourtab.retainers import ledger_reads
from hourtab.retainers import service as retainers
from hourtab.retainers.models import Retainer
from hourtab.retainers.periods import local_date
from hourtab.retainers.revisions import Revision, revisions_of
from hourtab.retainers.totals import no_periods
from hourtab.statements import month_status, parse_month

MAX_TEXT = 2000


def _line(value: str | None, what: str, limit: int = 200, required: bool = False) -> str:
    text = " ".join(xml_safe(value).split())
    if required and not text:
        raise InvalidInput(f"Give the {what}.")
    if len(text) > limit:
        raise InvalidInput(f"The {what} is too long ({limit} characters at most).")
    return text


def _block(value: str | None, what: str) -> str:
    """Text of several lines (an address, how to pay), kept line by line as written."""
    text = "\n".join(line.rstrip() for line in xml_safe(value).replace("\r\n", "\n").split("\n")).strip()
    if len(text) > MAX_TEXT:
        raise InvalidInput(f"The {what} is too long ({MAX_TEXT} characters at most).")
    return text


def _tax_rate(value: str | Decimal | None) -> Decimal | None:
    if value is None or str(value).strip() == "":
        return None
    try:
        rate = Decimal(str(value).strip().rstrip("%").replace(",", "."))
    except InvalidOperation as e:
        raise InvalidInput(f"The tax rate is a percentage such as 19 or 7.5, not {value!r}.") from e
    if not rate.is_finite() or not 0 <= rate <= 100 or rate != rate.quantize(Decimal("0.001")):
        raise InvalidInput(f"The tax rate is a percentage from 0 to 100 (3 decimals at most), not {value!r}.")
    return rate


def profile_of(session: Session, account_id: int) -> InvoiceProfile | None:
    return session.scalars(select_owned(InvoiceProfile, account_id)).first()


def save_invoice_profile(session: Session, account: Account, *, name: str, address: str = "", tax_id: str = "",
                         payment: str = "", tax_label: str = "", tax_rate: str | None = None) -> InvoiceProfile:
    """Set who invoices, how to pay and the optional tax line (a label needs a rate and back)."""
    rate = _tax_rate(tax_rate)
    label = _line(tax_label, "tax label", 40)
    if rate is not None and not label:
        label = "Tax"
    profile = profile_of(session, account.id) or InvoiceProfile(account_id=account.id)
    profile.name = _line(name, "name on your invoices", required=True)
    profile.address, profile.payment = _block(address, "address"), _block(payment, "payment instructions")
    profile.tax_id, profile.tax_label, profile.tax_rate = _line(tax_id, "tax id", 64), label, rate
    profile.updated_at = dt.datetime.now(dt.UTC)
    session.add(profile)
    session.flush()
    return profile


def client_of(session: Session, retainer: Retainer) -> InvoiceClient | None:
    return session.scalars(select(InvoiceClient).where(InvoiceClient.retainer_id == retainer.id)).first()


def save_client(session: Session, account: Account, retainer_id: int, *, name: str, address: str = "",
                tax_id: str = "") -> InvoiceClient:
    """Who a retainer's invoices are made out to (default: the retainer's client name)."""
    retainer = retainers.get_retainer(session, account, retainer_id)
    client = client_of(session, retainer) or InvoiceClient(account_id=account.id, retainer_id=retainer.id)
    client.name = _line(name, "client's name", required=True)
    client.address, client.tax_id = _block(address, "client's address"), _line(tax_id, "client's tax id", 64)
    session.add(client)
    session.flush()
    return client


def list_invoices(session: Session, account: Account, retainer_id: int) -> list[Invoice]:
    retainer = retainers.get_retainer(session, account, retainer_id)
    return list(session.scalars(select_owned(Invoice, account.id).where(Invoice.retainer_id == retainer.id)
                                .order_by(Invoice.month.desc())))


def _latest_revision(session: Session, retainer: Retainer, starts: tuple) -> tuple[int, Revision | None]:
    """(highest revision number, that revision) over the periods starting on ``starts``; (0, None) unrevised."""
    found = [revs[-1] for start, revs in revisions_of(session, retainer).items() if start in starts]
    latest = max(found, key=lambda r: (r.number, r.at), default=None)
    return (latest.number if latest else 0), latest


@dataclass(frozen=True)
class Party:
    """One side of an invoice as it was issued (``payment``: the consultant's side only)."""

    name: str
    address: str = ""
    tax_id: str = ""
    payment: str = ""


def _parties_now(session: Session, profile: InvoiceProfile, retainer: Retainer) -> dict:
    """The details both sides have today, kept on the invoice when it is issued."""
    client = client_of(session, retainer)
    return {"from": {"name": profile.name, "address": profile.address, "tax_id": profile.tax_id,
                     "payment": profile.payment},
            "to": {"name": client.name if client else retainer.client,
                   "address": client.address if client else "", "tax_id": client.tax_id if client else ""}}


def issue_invoice(session: Session, account: Account, retainer_id: int, month: str,
                  now: dt.datetime | None = None) -> Invoice:
    """Invoice a closed statement month under the account's next number (the same invoice if issued)."""
    now = now or dt.datetime.now(dt.UTC)
    parse_month(month)
    retainer = retainers.get_retainer(session, account, retainer_id)
    lock_account(session, account.id)
    issued = session.scalars(select(Invoice).where(Invoice.retainer_id == retainer.id,
                                                   Invoice.month == month)).first()
    if issued is not None:
        return issued
    profile = profile_of(session, account.id)
    if profile is None:
        raise InvalidInput("Set your invoicing details first (name, address, tax id, how to pay).")
    if month_status(session, retainer, month, local_date(now, retainer.terms().tz)) != "closed":
        raise InvalidInput(f"Only a closed month is invoiced, and {month} is not one of this retainer's.")
    figures = invoice_figures(ledger_reads.retainer_ledger(session, retainer, now, entries=no_periods), month,
                              profile.tax_label, profile.tax_rate)
    number = (session.scalar(select(func.max(Invoice.number)).where(Invoice.account_id == account.id)) or 0) + 1
    invoice = Invoice(account_id=account.id, retainer_id=retainer.id, number=number, month=month, issued_at=now,
                      currency=figures.currency, issued_total=figures.total,
                      issued_revision=_latest_revision(session, retainer, figures.starts)[0],
                      parties=_parties_now(session, profile, retainer), tax_label=profile.tax_label,
                      tax_rate=profile.tax_rate)
    session.add(invoice)
    session.flush()
    return invoice


@dataclass(frozen=True)
class InvoiceView:
    """Everything the invoice document shows."""

    invoice: Invoice
    retainer: Retainer
    issuer: Party
    client: Party
    figures: InvoiceFigures
    #: The month's latest revision made after the invoice was issued, or ``None``.
    revision: Revision | None


def invoice_view(session: Session, account: Account, invoice_id: int, now: dt.datetime | None = None) -> InvoiceView:
    """The invoice as issued (parties, tax line), its lines from the ledger as it stands now."""
    invoice = get_owned(session, Invoice, account.id, invoice_id)
    retainer = session.get(Retainer, invoice.retainer_id)
    if retainer is None:
        raise NotFound(f"Invoice {invoice_id} not found")
    ledger = ledger_reads.retainer_ledger(session, retainer, now or dt.datetime.now(dt.UTC), entries=no_periods)
    figures = invoice_figures(ledger, invoice.month, invoice.tax_label, invoice.tax_rate, retainer.language)
    number, latest = _latest_revision(session, retainer, figures.starts)
    return InvoiceView(invoice=invoice, retainer=retainer, issuer=Party(**invoice.parties["from"]),
                       client=Party(**invoice.parties["to"]), figures=figures,
                       revision=latest if number > invoice.issued_revision else None)


def invoice_months(session: Session, account: Account, retainer_id: int,
                   now: dt.datetime | None = None) -> list[tuple[str, Invoice | None]]:
    """The retainer's closed statement months, newest first, each with its invoice if issued."""
    retainer = retainers.get_retainer(session, account, retainer_id)
    ledger = ledger_reads.retainer_ledger(session, retainer, now or dt.datetime.now(dt.UTC), entries=no_periods)
    open_months = {p.period.month_key for p in ledger.periods if p.is_open}
    months = sorted({p.period.month_key for p in ledger.periods} - open_months, reverse=True)
    issued = {i.month: i for i in list_invoices(session, account, retainer_id)}
    return [(month, issued.get(month)) for month in months]
