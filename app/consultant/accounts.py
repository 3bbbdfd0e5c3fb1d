"""/signup, /login, /logout, /account/password."""

from __future__ import annotations

from flask import current_app, flash, redirect, render_template, request, url_for
from flask_login import login_required, login_user, logout_user

from app.auth import CurrentAccount, account
from app.consultant import bp
from app.db import get_db
from app.errors import form_status
from app.forms import LoginForm, PasswordForm, SignupForm
from hourtab import accounts, ratelimit
from hourtab.db import transaction
from hourtab.errors import Conflict, InvalidInput, LimitReached, Unauthorized

LOGIN_WINDOW_S = 60


def _safe_next(target: str | None) -> str:
    """Only same-site relative paths, so ``?next=`` cannot send anyone to another host."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return url_for("consultant.dashboard")


@bp.route("/signup", methods=["GET", "POST"])
def signup():
    form = SignupForm()
    error = None
    if form.validate_on_submit():
        db = get_db()
        try:
            with transaction(db):
                new = accounts.create_account(db, form.email.data, form.password.data,
                                              display_name=form.display_name.data or "")
        except (InvalidInput, Conflict) as e:
            field = form.email if "mail" in str(e) else form.password
            field.errors.append(str(e))
            error = e
        else:
            login_user(CurrentAccount(new))
            flash("Welcome to HourTab.")
            return redirect(url_for("consultant.dashboard"))
    return render_template("consultant/signup.html", form=form), *form_status(error)


@bp.route("/login", methods=["GET", "POST"])
def login():
    form = LoginForm()
    error = None
    if request.method == "POST":
        db = get_db()
        keys = [f"ip:{request.remote_addr}"]
        if form.email.data:
            keys.append(f"email:{form.email.data.strip().lower()}")
        try:
            ratelimit.check(db, "login", keys, int(current_app.config["LOGIN_LIMIT"]), LOGIN_WINDOW_S)
        except LimitReached as e:
            db.rollback()
            form.form_errors.append(str(e))
            return render_template("consultant/login.html", form=form), *form_status(e)
        if form.validate_on_submit():
            with transaction(db):
                found = accounts.authenticate(db, form.email.data, form.password.data)
                if found is None:
                    ratelimit.record(db, "login", keys, LOGIN_WINDOW_S)
            if found is not None:
                login_user(CurrentAccount(found))
                return redirect(_safe_next(request.args.get("next")))
            error = Unauthorized("That e-mail and password do not match an account.")
            form.form_errors.append(str(error))
    return render_template("consultant/login.html", form=form), *form_status(error)


@bp.route("/logout", methods=["POST"])
def logout():
    logout_user()
    flash("You are logged out.")
    return redirect(url_for("consultant.login"))


@bp.route("/account/password", methods=["GET", "POST"])
@login_required
def change_password():
    form = PasswordForm()
    error = None
    if form.validate_on_submit():
        db = get_db()
        me = db.merge(account())
        try:
            with transaction(db):
                accounts.change_password(db, me, form.current.data, form.new.data)
        except InvalidInput as e:
            form.form_errors.append(str(e))
            error = e
        else:
            login_user(CurrentAccount(me))
            flash("Your password is changed; other sessions are logged out.")
            return redirect(url_for("consultant.dashboard"))
    return render_template("consultant/password.html", form=form), *form_status(error)
