"""Flask-Login wiring: the session cookie carries the account id; the domain knows nothing of it."""

from __future__ import annotations

import hashlib
import hmac

from flask import Flask, redirect, request, url_for
from flask_login import LoginManager, UserMixin, current_user

from app.db import get_db
from hourtab.accounts import Account

login_manager = LoginManager()


class CurrentAccount(UserMixin):
    """Adapter between Flask-Login and the domain's ``Account`` (which must not import Flask)."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self.id = f"{account.id}:{session_stamp(account)}"


def session_stamp(account: Account) -> str:
    """Part of the session id that changes with every password change, ending other sessions.

    Derived from the password hash (a fresh salt each time), not from a timestamp, which two changes
    within one second would share; hashed again so the cookie reveals nothing about the hash.
    """
    return hashlib.sha256(account.password_hash.encode()).hexdigest()[:20]


def init_app(app: Flask) -> None:
    login_manager.init_app(app)
    login_manager.login_view = "consultant.login"
    login_manager.login_message = "Please log in to see that page."
    login_manager.session_protection = "basic"

    @login_manager.user_loader
    def _load(user_id: str) -> CurrentAccount | None:
        try:
            pk, stamp = user_id.split(":")
            account = get_db().get(Account, int(pk))
        except (ValueError, TypeError):
            return None
        if account is None or not hmac.compare_digest(session_stamp(account), stamp):
            return None
        return CurrentAccount(account)

    @login_manager.unauthorized_handler
    def _unauthorized():
        from app.errors import render_error, wants_json

        if wants_json():
            return render_error(401, "Unauthorized", "Log in first.")
        return redirect(url_for("consultant.login", next=request.full_path))


def account() -> Account:
    """The logged-in consultant's account (views are behind ``login_required``)."""
    return current_user.account
