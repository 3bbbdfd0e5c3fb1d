"""The consultant's invoicing details, each retainer's client details, and the invoices issued.

An invoice's number is unique per account (a database constraint) and given once, when it is
issued; it is never given again nor changed, and a revision of the month it bills keeps it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import JSON, ForeignKey, Integer, Numeric, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.scoping import AccountOwned


class InvoiceProfile(AccountOwned, Base):
    """Who invoices: the consultant's name, address and tax id, how to pay, and an optional tax line."""

    __tablename__ = "invoice_profiles"
    __table_args__ = (UniqueConstraint("account_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    address: Mapped[str] = mapped_column(Text, nullable=False, default="")
    tax_id: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    #: How to pay, as the consultant writes it (bank details, a payment link…); shown as written.
    payment: Mapped[str] = mapped_column(Text, nullable=False, default="")
    #: An optional tax line: its label ("VAT") and rate in percent; no line when the rate is empty.
    tax_label: Mapped[str] = mapped_column(String(40), nullable=False, default="")
    tax_rate: Mapped[Decimal | None] = mapped_column(Numeric(6, 3), nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class InvoiceClient(AccountOwned, Base):
    """Who is invoiced for a retainer: the client's legal name, address and tax id."""

    __tablename__ = "invoice_clients"
    __table_args__ = (UniqueConstraint("retainer_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    address: Mapped[str] = mapped_column(Text, nullable=False, default="")
    tax_id: Mapped[str] = mapped_column(String(64), nullable=False, default="")


class Invoice(AccountOwned, Base):
    """One issued invoice: a retainer's statement month, its number, and what it billed when issued."""

    __tablename__ = "invoices"
    __table_args__ = (UniqueConstraint("account_id", "number"), UniqueConstraint("retainer_id", "month"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    retainer_id: Mapped[int] = mapped_column(ForeignKey("retainers.id", ondelete="CASCADE"), nullable=False,
                                             index=True)
    number: Mapped[int] = mapped_column(Integer, nullable=False)
    #: The statement month it bills, ``YYYY-MM``.
    month: Mapped[str] = mapped_column(String(7), nullable=False)
    issued_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    currency: Mapped[str] = mapped_column(String(3), nullable=False)
    #: The total billed when issued, and the month's latest revision number then (0: none), so a
    #: revised invoice can say what it was.
    issued_total: Mapped[Decimal] = mapped_column(Numeric(18, 4), nullable=False)
    issued_revision: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    #: Who invoiced whom, how to pay and the tax line as they were when issued: an invoice the client
    #: holds does not change when the consultant later edits their details or tax rate.
    #: ``{"from": {"name", "address", "tax_id", "payment"}, "to": {"name", "address", "tax_id"}}``.
    parties: Mapped[dict] = mapped_column(JSON, nullable=False)
    tax_label: Mapped[str] = mapped_column(String(40), nullable=False, default="")
    tax_rate: Mapped[Decimal | None] = mapped_column(Numeric(6, 3), nullable=True)

    @property
    def label(self) -> str:
        """``0007``: the number as the invoice prints it."""
        return f"{self.number:04d}"
