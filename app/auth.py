"""Flask-Login wiring: the session cookie carries a server-side session token; the domain knows nothing of it."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac

from flask import Flask, current_app, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import LoginManager, UserMixin, current_user, login_user, logout_user

from app.db import get_db
from app.errors import render_error, wants_json
from hourtab.core import sessions
from hourtab.core.accounts import Account
from hourtab.core.db import transaction

login_manager = LoginManager()


class CurrentAccount(UserMixin):
    """Adapter between Flask-Login and the domain's ``Account`` (which must not import Flask).

    Its id, which Flask-Login keeps in the signed cookie, is the server-side session's token
    plus a stamp of the password hash.
    """

    def __init__(self, account: Account, token: str) -> None:
        self.account = account
        self.token = token
        self.id = f"{token}:{session_stamp(account)}"


def session_stamp(account: Account) -> str:
    """Part of the session id that changes with every password change, even one made outside the app.

    Derived from the password hash (a fresh salt each time), not from a timestamp, which two changes
    within one second would share; hashed again so the cookie reveals nothing about the hash.
    """
    return hashlib.sha256(account.password_hash.encode()).hexdigest()[:20]


def lifetimes() -> sessions.Lifetimes:
    cfg = current_app.config
    return sessions.Lifetimes(absolute=dt.timedelta(days=float(cfg["SESSION_MAX_DAYS"])),
                              idle=dt.timedelta(hours=float(cfg["SESSION_IDLE_HOURS"])))


def log_in(account: Account) -> None:
    """Open a server-side session for the account and put its token in the cookie."""
    db = get_db()
    with transaction(db):
        sessions.prune(db, account.id, lifetimes())
        token = sessions.open_session(db, account.id)
    login_user(CurrentAccount(account, token))


def log_out(everywhere: bool = False) -> None:
    """End this session (or every session of the account) on the server, then forget the cookie."""
    if current_user.is_authenticated:
        db = get_db()
        with transaction(db):
            if everywhere:
                sessions.revoke_all(db, current_user.account.id)
            else:
                sessions.revoke(db, current_user.token)
    logout_user()


def _load(user_id: str) -> CurrentAccount | None:
    token, _, stamp = (user_id or "").partition(":")
    db = get_db()
    row = sessions.resolve(db, token, lifetimes())
    if row is None:
        return None
    account = db.get(Account, row.account_id)
    if account is None or not hmac.compare_digest(session_stamp(account), stamp):
        return None
    if sessions.needs_touch(row):
        # Bookkeeping for the idle limit, at most once a minute per session.
        with transaction(db):
            sessions.touch(db, row)
    return CurrentAccount(account, token)


def init_app(app: Flask) -> None:
    login_manager.init_app(app)
    login_manager.login_view = "consultant.login"
    login_manager.login_message = "Please log in to see that page."
    login_manager.session_protection = "basic"
    login_manager.user_loader(_load)

    @login_manager.unauthorized_handler
    def _unauthorized() -> ResponseReturnValue:
        if wants_json():
            return render_error(401, "Unauthorized", "Log in first.")
        return redirect(url_for("consultant.login", next=request.full_path))


def account() -> Account:
    """The logged-in consultant's account (views are behind ``login_required``)."""
    return current_user.account
