"""/account/tokens: personal access tokens for the API, made, listed and revoked on the Settings page.

A new token is shown once, on the page that answers the form (not after a redirect: it is never
put in the session cookie nor in a URL), and the page is not kept by the browser's cache.
"""

from __future__ import annotations

from flask import flash, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from flask_wtf import FlaskForm
from wtforms import StringField
from wtforms.validators import Length

from app.auth import account
from app.consultant import bp
from app.db import get_db
from hourtab.core import apitokens
from hourtab.core.db import transaction
from hourtab.core.errors import Conflict, InvalidInput


class TokenForm(FlaskForm):
    name = StringField("Name (what the token is for, e.g. “invoicing script”)",
                       validators=[Length(max=apitokens.MAX_NAME)])


class RevokeForm(FlaskForm):
    """CSRF only, for the revoke buttons."""


def tokens_context() -> dict:
    """What the Settings page shows of the tokens: the list and the forms."""
    return {"tokens": apitokens.list_tokens(get_db(), account().id), "token_form": TokenForm(),
            "revoke_form": RevokeForm()}


@bp.route("/account/tokens", methods=["POST"])
@login_required
def token_create() -> ResponseReturnValue:
    form = TokenForm()
    if not form.validate_on_submit():
        flash(" ".join(e for errors in form.errors.values() for e in errors) or "The form expired; try again.")
        return redirect(url_for("consultant.account_settings", _anchor="api-tokens"))
    db = get_db()
    try:
        with transaction(db):
            row, token = apitokens.create(db, account().id, form.name.data or "")
    except (InvalidInput, Conflict) as e:
        flash(str(e))
        return redirect(url_for("consultant.account_settings", _anchor="api-tokens"))
    page = render_template("consultant/token_created.html", row=row, token=token)
    return page, 200, {"Cache-Control": "no-store"}


@bp.route("/account/tokens/<int:token_id>/revoke", methods=["POST"])
@login_required
def token_revoke(token_id: int) -> ResponseReturnValue:
    if not RevokeForm().validate_on_submit():
        flash("The form expired; try again.")
        return redirect(url_for("consultant.account_settings", _anchor="api-tokens"))
    db = get_db()
    with transaction(db):
        row = apitokens.revoke(db, account().id, token_id)
    flash(f"Revoked the token “{row.name}”: calls with it are refused from now on.")
    return redirect(url_for("consultant.account_settings", _anchor="api-tokens"))
