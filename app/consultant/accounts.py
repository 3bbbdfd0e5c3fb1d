"""/signup, /login, /logout, /account/password, /account/sessions/revoke, /account/settings, /account/plan."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import cache
from typing import TypeVar
from urllib.parse import urlsplit
from zoneinfo import available_timezones

from flask import current_app, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from flask_wtf import FlaskForm
from sqlalchemy.orm import Session
from wtforms import SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import Length

from app.auth import account, log_in, log_out
from app.consultant import bp
from app.consultant.tokens import tokens_context
from app.db import get_db
from app.errors import form_status
from app.forms import LoginForm, PasswordForm, SignupForm
from hourtab import billing, settings
from hourtab.core import accounts, ratelimit
from hourtab.core.db import transaction
from hourtab.core.errors import Conflict, InvalidInput, LimitReached, Unauthorized
from hourtab.retainers.plans import retainer_limit
from hourtab.retainers.service import active_count

LOGIN_WINDOW_S = 60
T = TypeVar("T")


@cache
def _zones() -> tuple[SelectChoice, ...]:
    return tuple(SelectChoice(z, z) for z in sorted(available_timezones()) if "/" in z or z == "UTC")


def zone_choices(current: str | None = None) -> list[SelectChoice]:
    """The time zones to pick from (Settings, the retainer form); a zone already set stays listed."""
    zones = list(_zones())
    if current and all(c.value != current for c in zones):
        zones.insert(0, SelectChoice(current, current))
    return zones


class SettingsForm(FlaskForm):
    display_name = StringField("Display name (clients see it instead of your e-mail)",
                               validators=[Length(max=200)])
    contact = StringField("Contact e-mail for clients (empty = your log-in e-mail)", validators=[Length(max=320)])
    timezone = SelectField("Default time zone of new retainers and uploads", validate_choice=False)
    rounding_min = SelectField("Default rounding of new retainers", choices=[
        SelectChoice("0", "None"), SelectChoice("6", "6 minutes"), SelectChoice("15", "15 minutes"),
        SelectChoice("30", "30 minutes")])
    hours_unit = SelectField("Write hours as", choices=[
        SelectChoice("decimal", "Decimal hours (0.67 h)"), SelectChoice("hm", "Hours and minutes (0:40 h)")])


def _safe_next(target: str | None) -> str:
    """A same-site path, or the dashboard: ``?next=`` must never lead to another host.

    Browsers and header writers drop or reinterpret control characters, whitespace and
    backslashes (``/%09/evil`` arrives as a tab and leaves as ``//evil``), so any of them refuses the target outright
    rather than being cleaned up into something else.
    """
    fallback = url_for("consultant.dashboard")
    if not target or len(target) > 2000:
        return fallback
    if any(c == "\\" or c.isspace() or unicodedata.category(c)[0] in "CZ" for c in target):
        return fallback
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/") or parts.path.startswith("//"):
        return fallback
    return target


def _commit_or_refuse(change: Callable[[Session], T],
                      refused: tuple[type[Exception], ...] = (InvalidInput,)) -> tuple[T | None, Exception | None]:
    """Make ``change`` in one transaction; a refused input comes back (nothing written) for the form to show."""
    db = get_db()
    try:
        with transaction(db):
            return change(db), None
    except refused as e:
        return None, e


@bp.route("/signup", methods=["GET", "POST"])
def signup() -> ResponseReturnValue:
    form = SignupForm()
    form.timezone.choices = zone_choices()
    if request.method == "GET":
        form.timezone.data = "UTC"  # until the page's script puts the browser's zone there
    error = None
    if form.validate_on_submit():
        new, error = _commit_or_refuse(lambda db: accounts.create_account(
            db, form.email.data, form.password.data, display_name=form.display_name.data or "",
            timezone=form.timezone.data), (InvalidInput, Conflict))
        if new is not None:
            log_in(new)
            flash("Welcome to HourTab.")
            return redirect(url_for("consultant.dashboard"))
        (form.email if "mail" in str(error) else form.password).errors.append(str(error))
    return render_template("consultant/signup.html", form=form), *form_status(error)


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    form = LoginForm()
    error = None
    if form.validate_on_submit():
        db = get_db()
        keys = [f"ip:{request.remote_addr}", f"email:{accounts.login_key(form.email.data)}"]
        with transaction(db):
            attempt = ratelimit.take(db, "login", keys, LOGIN_WINDOW_S)
        try:
            ratelimit.admit(db, "login", keys, int(current_app.config["LOGIN_LIMIT"]), LOGIN_WINDOW_S)
        except LimitReached as e:
            with transaction(db):
                ratelimit.release(db, attempt)
            form.form_errors.append(str(e))
            return render_template("consultant/login.html", form=form), *form_status(e)
        with transaction(db):
            found = accounts.authenticate(db, form.email.data, form.password.data)
            if found is not None:
                ratelimit.release(db, attempt)  # only failed log-ins count against the limit
        if found is not None:
            log_in(found)
            return redirect(_safe_next(request.args.get("next")))
        error = Unauthorized("That e-mail and password do not match an account.")
        form.form_errors.append(str(error))
    return render_template("consultant/login.html", form=form), *form_status(error)


@bp.route("/logout", methods=["POST"])
def logout() -> ResponseReturnValue:
    log_out()
    flash("You are logged out.")
    return redirect(url_for("consultant.login"))


@bp.route("/account/sessions/revoke", methods=["POST"])
@login_required
def logout_everywhere() -> ResponseReturnValue:
    log_out(everywhere=True)
    flash("Every session of this account is logged out, this one included.")
    return redirect(url_for("consultant.login"))


@bp.route("/account/password", methods=["GET", "POST"])
@login_required
def change_password() -> ResponseReturnValue:
    form = PasswordForm()
    error = None
    if form.validate_on_submit():
        me = get_db().merge(account())
        _, error = _commit_or_refuse(lambda db: accounts.change_password(db, me, form.current.data, form.new.data))
        if error is None:
            log_in(me)
            flash("Your password is changed; other sessions are logged out.")
            return redirect(url_for("consultant.dashboard"))
        form.form_errors.append(str(error))
    return render_template("consultant/password.html", form=form), *form_status(error)


@bp.route("/account/settings", methods=["GET", "POST"])
@login_required
def account_settings() -> ResponseReturnValue:
    form = SettingsForm()
    db = get_db()
    me = db.merge(account())
    error = None
    if request.method == "GET":
        form.display_name.data, form.contact.data, form.timezone.data = me.display_name, me.contact, me.timezone
        form.rounding_min.data, form.hours_unit.data = str(me.rounding_min), me.hours_unit
    form.timezone.choices = zone_choices(form.timezone.data)
    if request.method == "POST" and form.validate_on_submit():
        _, error = _commit_or_refuse(lambda db: settings.update_settings(
            db, me, display_name=form.display_name.data or "", contact=form.contact.data or "",
            timezone=form.timezone.data or "", rounding_min=form.rounding_min.data or "0",
            hours_unit=form.hours_unit.data or "decimal"))
        if error is None:
            flash("Settings saved; your clients' pages show them now.")
            return redirect(url_for("consultant.account_settings"))
        form.form_errors.append(str(error))

    return render_template("consultant/settings.html", form=form, me=me, **tokens_context()), *form_status(error)


def _billing() -> billing.Billing:
    """The payment provider: ``BILLING`` in the app config, else the operator-confirmed manual one."""
    return current_app.config.get("BILLING") or billing.ManualBilling()


class UpgradeForm(FlaskForm):
    """CSRF only: the plan is fixed by the button."""


@bp.route("/account/plan")
@login_required
def account_plan() -> ResponseReturnValue:
    db = get_db()
    me = db.merge(account())
    plans = [(p.value, billing.plan_summary(p.value)) for p in accounts.Plan]
    return render_template("consultant/plan.html", me=me, plans=plans, active=active_count(db, me.id),
                           pending=_billing().pending(db, me), form=UpgradeForm(),
                           current=billing.plan_terms(me.plan), retainer_limit=retainer_limit(me))


@bp.route("/account/plan/<plan>", methods=["POST"])
@login_required
def account_upgrade(plan: str) -> ResponseReturnValue:
    if not UpgradeForm().validate_on_submit():
        raise InvalidInput("The form expired; reload the page and try again.")
    db = get_db()
    with transaction(db):
        step = _billing().start_upgrade(db, db.merge(account()), plan)
    if step.redirect_url:
        return redirect(step.redirect_url)
    flash(step.message)
    return redirect(url_for("consultant.account_plan"))
