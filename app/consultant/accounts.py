"""/signup, /login, /logout, /account/password, /account/sessions/revoke."""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

from flask import current_app, flash, redirect, render_template, request, url_for
from flask_login import login_required

from app.auth import account, log_in, log_out
from app.consultant import bp
from app.db import get_db
from app.forms import LoginForm, PasswordForm, SignupForm
from hourtab import accounts, ratelimit
from hourtab.db import transaction
from hourtab.errors import Conflict, InvalidInput, LimitExceeded

LOGIN_WINDOW_S = 60


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


@bp.route("/signup", methods=["GET", "POST"])
def signup():
    form = SignupForm()
    status = 200
    if form.validate_on_submit():
        db = get_db()
        try:
            with transaction(db):
                new = accounts.create_account(db, form.email.data, form.password.data,
                                              display_name=form.display_name.data or "")
        except (InvalidInput, Conflict) as e:
            field = form.email if "mail" in str(e) else form.password
            field.errors.append(str(e))
            status = 409 if isinstance(e, Conflict) else 400
        else:
            log_in(new)
            flash("Welcome to HourTab.")
            return redirect(url_for("consultant.dashboard"))
    elif request.method == "POST":
        status = 400
    return render_template("consultant/signup.html", form=form), status


@bp.route("/login", methods=["GET", "POST"])
def login():
    form = LoginForm()
    status = 200
    if form.validate_on_submit():
        db = get_db()
        keys = [f"ip:{request.remote_addr}", f"email:{accounts.login_key(form.email.data)}"]
        with transaction(db):
            attempt = ratelimit.take(db, "login", keys, LOGIN_WINDOW_S)
        try:
            ratelimit.admit(db, "login", keys, int(current_app.config["LOGIN_LIMIT"]), LOGIN_WINDOW_S)
        except LimitExceeded as e:
            with transaction(db):
                ratelimit.release(db, attempt)
            form.form_errors.append(str(e))
            return render_template("consultant/login.html", form=form), 429, {"Retry-After": str(e.retry_after)}
        with transaction(db):
            found = accounts.authenticate(db, form.email.data, form.password.data)
            if found is not None:
                ratelimit.release(db, attempt)  # only failed log-ins count against the limit
        if found is not None:
            log_in(found)
            return redirect(_safe_next(request.args.get("next")))
        form.form_errors.append("That e-mail and password do not match an account.")
        status = 401
    elif request.method == "POST":
        status = 400
    return render_template("consultant/login.html", form=form), status


@bp.route("/logout", methods=["POST"])
def logout():
    log_out()
    flash("You are logged out.")
    return redirect(url_for("consultant.login"))


@bp.route("/account/sessions/revoke", methods=["POST"])
@login_required
def logout_everywhere():
    log_out(everywhere=True)
    flash("Every session of this account is logged out, this one included.")
    return redirect(url_for("consultant.login"))


@bp.route("/account/password", methods=["GET", "POST"])
@login_required
def change_password():
    form = PasswordForm()
    status = 200
    if form.validate_on_submit():
        db = get_db()
        me = db.merge(account())
        try:
            with transaction(db):
                accounts.change_password(db, me, form.current.data, form.new.data)
        except InvalidInput as e:
            form.form_errors.append(str(e))
            status = 400
        else:
            log_in(me)
            flash("Your password is changed; other sessions are logged out.")
            return redirect(url_for("consultant.dashboard"))
    elif request.method == "POST":
        status = 400
    return render_template("consultant/password.html", form=form), status
