"""A session ends for good at log-out, password change, "log out everywhere" and its lifetimes.

The attack: copy the session cookie (and a CSRF token) before the owner logs out, then replay both
from another address. The cookie is signed, so only a server-side record can end it.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from sqlalchemy import func, select, update

from hourtab.core.sessions import LoginSession
from incidents.writeups.models import Incident
from tests.helpers.forms import PASSWORD, csrf_token, post_form, signup

ELSEWHERE = {"REMOTE_ADDR": "203.0.113.77"}


def _cookie(client) -> str:
    return client.get_cookie("session").value


def _replay(app, cookie: str):
    thief = app.test_client()
    thief.environ_base.update(ELSEWHERE)
    thief.set_cookie("session", cookie)
    return thief


def _incidents(app) -> int:
    with app.app_context():
        from app.db import get_db

        return get_db().scalar(select(func.count(Incident.id)))


def _log_in(app):
    c = app.test_client()
    r = post_form(c, "/login", {"email": "consultant@example.com", "password": PASSWORD})
    assert r.status_code == 302
    return c


def test_cookie_replayed_after_logout_reads_and_writes_nothing(app, logged_in):
    token = csrf_token(logged_in, "/incidents")
    cookie = _cookie(logged_in)
    assert _replay(app, cookie).get("/api/me").status_code == 200  # the replay works while logged in
    assert post_form(logged_in, "/logout", {}, page="/dashboard").status_code == 302

    thief = _replay(app, cookie)
    assert thief.get("/api/me").status_code == 401
    r = thief.post("/incidents", data={"title": "planted", "csrf_token": token})
    assert r.status_code in (302, 400, 401) and "/login" in r.headers.get("Location", "/login")
    assert _incidents(app) == 0
    assert thief.get("/dashboard").status_code == 302


def test_password_change_ends_every_other_session_even_a_copied_cookie(app, logged_in):
    other = _log_in(app)
    cookie = _cookie(other)
    r = post_form(logged_in, "/account/password", {"current": PASSWORD, "new": "a brand new secret"})
    assert r.status_code == 302
    assert logged_in.get("/api/me").status_code == 200
    assert other.get("/api/me").status_code == 401
    assert _replay(app, cookie).get("/api/me").status_code == 401


def test_log_out_everywhere(app, logged_in):
    others = [_log_in(app) for _ in range(2)]
    r = post_form(logged_in, "/account/sessions/revoke", {}, page="/account/password")
    assert r.status_code == 302 and r.headers["Location"].endswith("/login")
    for c in [logged_in, *others]:
        assert c.get("/api/me").status_code == 401
    assert _log_in(app).get("/api/me").status_code == 200


def test_the_account_page_offers_log_out_everywhere(logged_in):
    html = logged_in.get("/account/password").get_data(as_text=True)
    assert re.search(r'action="/account/sessions/revoke"', html)


@pytest.mark.parametrize("column,age", [("created_at", dt.timedelta(days=15)),
                                        ("last_seen_at", dt.timedelta(days=3))])
def test_absolute_and_idle_lifetimes(app, logged_in, column, age):
    assert logged_in.get("/api/me").status_code == 200
    with app.app_context():
        from app.db import get_db

        db = get_db()
        past = dt.datetime.now(dt.UTC) - age
        db.execute(update(LoginSession).values({column: past, **({"last_seen_at": past}
                                                                 if column == "created_at" else {})}))
        db.commit()
    assert logged_in.get("/api/me").status_code == 401


def test_lifetimes_are_configurable(make_app):
    app = make_app(HOURTAB_SESSION_MAX_DAYS="1", HOURTAB_SESSION_IDLE_HOURS="2")
    c = app.test_client()
    signup(c)
    assert c.get("/api/me").status_code == 200
    with app.app_context():
        from app.db import get_db

        db = get_db()
        db.execute(update(LoginSession).values(last_seen_at=dt.datetime.now(dt.UTC) - dt.timedelta(hours=3)))
        db.commit()
    assert c.get("/api/me").status_code == 401


def test_sessions_are_stored_by_digest_not_by_cookie_value(app, logged_in):
    with app.app_context():
        from app.db import get_db

        ids = get_db().scalars(select(LoginSession.id)).all()
    assert len(ids) == 1 and re.fullmatch(r"[0-9a-f]{64}", ids[0])


def test_dead_sessions_are_forgotten_at_the_next_log_in(app, logged_in):
    assert post_form(logged_in, "/logout", {}, page="/dashboard").status_code == 302
    _log_in(app)
    with app.app_context():
        from app.db import get_db

        rows = get_db().execute(select(LoginSession.revoked_at)).all()
    assert rows == [(None,)]
