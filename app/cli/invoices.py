"""``hourtab invoice profile|client|issue``: who invoices, who is invoiced, and a closed month's invoice PDF."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import click

from app.cli.context import cli_session
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.invoices import service as invoices
from hourtab.invoices.invoice_document import invoice_filename, invoice_pdf

ACCOUNT = click.option("--account", "email", required=True, help="E-mail of the consultant's account.")


@click.group("invoice")
def invoice_group() -> None:
    """Invoices of closed statement months (numbered per account; no payment is taken)."""


@invoice_group.command("profile")
@ACCOUNT
@click.option("--name", required=True, help="Your name or business name, as the invoice shows it.")
@click.option("--address", default="", help="Your address (\\n for a new line).")
@click.option("--tax-id", default="", help="Your tax id (VAT number, EIN…).")
@click.option("--payment", default="", help="How to pay, as you write it (bank details, a link…).")
@click.option("--tax-label", default="", help="The tax line's label, e.g. VAT.")
@click.option("--tax-rate", default=None, help="The tax line's rate in percent, e.g. 19 (empty: no tax line).")
def invoice_profile(email: str, name: str, address: str, tax_id: str, payment: str, tax_label: str,
                    tax_rate: str | None) -> None:
    """Set your invoicing details."""
    with cli_session() as cx, transaction(cx.session):
        account = accounts.get_account(cx.session, email)
        invoices.save_invoice_profile(cx.session, account, name=name, address=address.replace("\\n", "\n"),
                                      tax_id=tax_id, payment=payment.replace("\\n", "\n"), tax_label=tax_label,
                                      tax_rate=tax_rate)
    click.echo(f"Saved the invoicing details of {account.email}.")


@invoice_group.command("client")
@click.argument("retainer_id", type=int)
@ACCOUNT
@click.option("--name", required=True, help="The client's legal name.")
@click.option("--address", default="", help="The client's address (\\n for a new line).")
@click.option("--tax-id", default="", help="The client's tax id.")
def invoice_client(retainer_id: int, email: str, name: str, address: str, tax_id: str) -> None:
    """Set who a retainer's invoices are made out to."""
    with cli_session() as cx, transaction(cx.session):
        account = accounts.get_account(cx.session, email)
        invoices.save_client(cx.session, account, retainer_id, name=name, address=address.replace("\\n", "\n"),
                             tax_id=tax_id)
    click.echo(f"Saved the client details of retainer {retainer_id}.")


@invoice_group.command("issue")
@click.argument("retainer_id", type=int)
@ACCOUNT
@click.option("--month", required=True, help="The closed statement month, YYYY-MM.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the PDF here (default: invoice-NUMBER-MONTH.pdf in the current folder).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "number", "month", "total", "currency", "pdf"}.')
def invoice_issue(retainer_id: int, email: str, month: str, out: Path | None, as_json: bool) -> None:
    """Issue (or fetch, if issued) the invoice of a closed month and write its PDF."""
    now = dt.datetime.now(dt.UTC)
    with cli_session() as cx:
        with transaction(cx.session):
            account = accounts.get_account(cx.session, email)
            invoice = invoices.issue_invoice(cx.session, account, retainer_id, month, now)
        view = invoices.invoice_view(cx.session, account, invoice.id, now)
        path = out or Path(invoice_filename(view))
        path.write_bytes(invoice_pdf(view))
    if as_json:
        click.echo(json.dumps({"id": invoice.id, "number": invoice.label, "month": month,
                               "total": str(view.figures.total), "currency": view.figures.currency,
                               "pdf": str(path)}))
    else:
        click.echo(f"Invoice {invoice.label} for {month}: {view.figures.total} {view.figures.currency}. PDF: {path}")


commands: list[click.Command] = [invoice_group]
