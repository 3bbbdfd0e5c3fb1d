"""Invoices on the consultant's side: the invoicing details, a retainer's client details, issuing a
closed month's invoice and downloading its PDF (the PDF is rendered on each download; GET writes nothing)."""

from __future__ import annotations

import datetime as dt
import re

from flask import Response, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from flask_wtf import FlaskForm
from wtforms import StringField, TextAreaField
from wtforms.validators import DataRequired, Length, Optional

from app.auth import account
from app.consultant import bp
from app.db import get_db
from app.public.hours import now
from hourtab.core.db import transaction
from hourtab.core.errors import InvalidInput
from hourtab.invoices import service as invoices
from hourtab.invoices.invoice_document import invoice_filename, invoice_pdf
from hourtab.retainers import service as retainers

MONTH = re.compile(r"^\d{4}-\d{2}$")


class ProfileForm(FlaskForm):
    name = StringField("Name on your invoices", validators=[DataRequired(), Length(max=200)])
    address = TextAreaField("Your address", validators=[Optional(), Length(max=2000)])
    tax_id = StringField("Your tax ID", validators=[Optional(), Length(max=64)])
    payment = TextAreaField("How to pay (shown as you write it)", validators=[Optional(), Length(max=2000)])
    tax_label = StringField("Tax line label, such as VAT", validators=[Optional(), Length(max=40)])
    tax_rate = StringField("Tax rate in percent (empty: no tax line)", validators=[Optional(), Length(max=10)])


class ClientForm(FlaskForm):
    name = StringField("Client's legal name", validators=[DataRequired(), Length(max=200)])
    address = TextAreaField("Client's address", validators=[Optional(), Length(max=2000)])
    tax_id = StringField("Client's tax ID", validators=[Optional(), Length(max=64)])


class IssueForm(FlaskForm):
    """CSRF only, for the issue buttons (the month is in the form's hidden field)."""


def _errors(form: FlaskForm) -> str:
    return " ".join(e for errors in form.errors.values() for e in errors) or "The form expired; try again."


def _local(path: str | None) -> str | None:
    """``path`` when it is a path on this site (never another host: ``//x`` or ``/\\x``), else ``None``."""
    return path if path and re.match(r"^/(?![/\\])[\w\-/]*$", path) else None


def _now() -> dt.datetime:
    return now()


@bp.route("/invoices/profile", methods=["GET", "POST"])
@login_required
def invoice_profile() -> ResponseReturnValue:
    db = get_db()
    profile = invoices.profile_of(db, account().id)
    form = ProfileForm(obj=profile)
    if request.method == "POST":
        if not form.validate_on_submit():
            raise InvalidInput(_errors(form))
        with transaction(db):
            invoices.save_invoice_profile(db, db.merge(account()), name=form.name.data, address=form.address.data,
                                          tax_id=form.tax_id.data, payment=form.payment.data,
                                          tax_label=form.tax_label.data, tax_rate=form.tax_rate.data)
        flash("Saved your invoicing details.")
        return redirect(_local(request.args.get("next")) or url_for("consultant.invoice_profile"))
    if profile is not None and profile.tax_rate is not None:
        form.tax_rate.data = f"{profile.tax_rate.normalize():f}"
    return render_template("consultant/invoices/profile.html", form=form)


@bp.route("/retainers/<int:retainer_id>/invoices")
@login_required
def retainer_invoices(retainer_id: int) -> ResponseReturnValue:
    db = get_db()
    me = account()
    retainer = retainers.get_retainer(db, me, retainer_id)
    client = invoices.client_of(db, retainer)
    client_form = ClientForm(obj=client)
    if client is None:
        client_form.name.data = retainer.client
    return render_template("consultant/invoices/retainer.html", r=retainer, client_form=client_form,
                           issue_form=IssueForm(), months=invoices.invoice_months(db, me, retainer_id, _now()),
                           profile=invoices.profile_of(db, me.id))


@bp.route("/retainers/<int:retainer_id>/invoices/client", methods=["POST"])
@login_required
def retainer_invoice_client(retainer_id: int) -> ResponseReturnValue:
    form = ClientForm()
    if not form.validate_on_submit():
        raise InvalidInput(_errors(form))
    db = get_db()
    with transaction(db):
        invoices.save_client(db, db.merge(account()), retainer_id, name=form.name.data, address=form.address.data,
                             tax_id=form.tax_id.data)
    flash("Saved the client's details.")
    return redirect(url_for("consultant.retainer_invoices", retainer_id=retainer_id))


@bp.route("/retainers/<int:retainer_id>/invoices/<month>", methods=["POST"])
@login_required
def retainer_invoice_issue(retainer_id: int, month: str) -> ResponseReturnValue:
    if not IssueForm().validate_on_submit() or not MONTH.match(month):
        raise InvalidInput("The form expired; try again.")
    db = get_db()
    with transaction(db):
        invoice = invoices.issue_invoice(db, db.merge(account()), retainer_id, month, _now())
    flash(f"Issued invoice {invoice.label} for {month}.")
    return redirect(url_for("consultant.retainer_invoices", retainer_id=retainer_id))


@bp.route("/invoices/<int:invoice_id>.pdf")
@login_required
def invoice_download(invoice_id: int) -> ResponseReturnValue:
    view = invoices.invoice_view(get_db(), account(), invoice_id, _now())
    return Response(invoice_pdf(view), mimetype="application/pdf",
                    headers={"Content-Disposition": f'inline; filename="{invoice_filename(view)}"',
                             "Cache-Control": "private, no-store"})
