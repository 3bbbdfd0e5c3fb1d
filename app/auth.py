"""Flask-Login wiring: the session cookie carries the account id; the domain knows nothing of it."""

from __future__ import annotations

from flask import Flask, redirect, request, url_for
from flask_login import LoginManager, UserMixin, current_user

from app.db import get_db
from hourtab.accounts import Account

login_manager = LoginManager()


class CurrentAccount(UserMixin):
    """Adapter between Flask-Login and the domain's ``Account`` (which must not import Flask)."""

    def __init__(self, account: Account) -> None:
        self.account = account
        # The password change time is part of the id, so changing the password ends other sessions.
        self.id = f"{account.id}:{int(account.password_changed_at.timestamp())}"


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
        if account is None or str(int(account.password_changed_at.timestamp())) != stamp:
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
