"""Sign-up, log-in, log-out, password change, CSRF, rate limits, bad input — on both databases."""

from __future__ import annotations

from sqlalchemy import func, select

from hourtab.core.accounts import Account
from tests.helpers.forms import PASSWORD, post_form, signup


def _accounts(app) -> int:
    with app.app_context():
        from app.db import get_db

        return get_db().scalar(select(func.count(Account.id)))


def test_signup_logout_login_dashboard(client):
    assert signup(client).status_code == 302
    assert "consultant@example.com" in client.get("/dashboard").get_data(as_text=True)
    assert post_form(client, "/logout", {}, page="/dashboard").status_code == 302
    assert client.get("/dashboard").status_code == 302
    r = post_form(client, "/login", {"email": "Consultant@Example.com", "password": PASSWORD})
    assert r.status_code == 302 and r.headers["Location"].endswith("/dashboard")
    assert client.get("/dashboard").status_code == 200


def test_password_is_hashed_with_argon2(app, client):
    signup(client)
    with app.app_context():
        from app.db import get_db

        stored = get_db().scalar(select(Account.password_hash))
    assert stored.startswith("$argon2id$") and PASSWORD not in stored


def test_signup_rejects_bad_input_and_changes_nothing(app, client):
    assert signup(client).status_code == 302
    post_form(client, "/logout", {}, page="/dashboard")
    r = signup(client)
    assert r.status_code == 409 and "already exists" in r.get_data(as_text=True)
    r = signup(client, email="not-an-email")
    assert r.status_code == 400 and "not valid" in r.get_data(as_text=True)
    r = signup(client, email="other@example.com", password="short")
    assert r.status_code == 400 and "at least 10 characters" in r.get_data(as_text=True)
    assert _accounts(app) == 1


def test_signup_asks_for_the_time_zone_and_keeps_it(app, client):
    page = client.get("/signup").get_data(as_text=True)
    assert 'data-browser-zone="preselect" id="timezone"' in page and '<option selected value="UTC">' in page
    assert "zone.js" in page
    base = {"email": "berlin@example.com", "password": PASSWORD}
    r = post_form(client, "/signup", base, page="/signup")
    assert r.status_code == 400 and "Choose your time zone." in r.get_data(as_text=True)
    r = post_form(client, "/signup", {**base, "timezone": "Mars/Olympus"}, page="/signup")
    assert r.status_code == 400 and _accounts(app) == 0
    r = post_form(client, "/signup", {**base, "timezone": "Europe/Berlin"}, page="/signup")
    assert r.status_code == 302
    with app.app_context():
        from app.db import get_db
        from hourtab.core.accounts import find_account

        assert find_account(get_db(), "berlin@example.com").timezone == "Europe/Berlin"


def test_post_without_csrf_token_is_400_and_creates_nothing(app, client):
    r = client.post("/signup", data={"email": "x@example.com", "password": PASSWORD})
    assert r.status_code == 400
    assert "security token" in r.get_data(as_text=True)
    assert _accounts(app) == 0


def test_eleventh_wrong_password_in_a_minute_is_429(client):
    signup(client)
    post_form(client, "/logout", {}, page="/dashboard")
    for _ in range(10):
        r = post_form(client, "/login", {"email": "consultant@example.com", "password": "wrong password!"})
        assert r.status_code == 401
    r = post_form(client, "/login", {"email": "consultant@example.com", "password": "wrong password!"})
    assert r.status_code == 429
    assert "Try again in" in r.get_data(as_text=True) and int(r.headers["Retry-After"]) > 0
    # Even the right password waits: the limit protects the account, not just one guess.
    r = post_form(client, "/login", {"email": "consultant@example.com", "password": PASSWORD})
    assert r.status_code == 429


def test_rate_limit_per_client_address_across_emails(client):
    for i in range(10):
        r = post_form(client, "/login", {"email": f"u{i}@example.com", "password": "wrong password!"})
        assert r.status_code == 401
    r = post_form(client, "/login", {"email": "fresh@example.com", "password": "wrong password!"})
    assert r.status_code == 429


def test_change_password_logs_out_other_sessions(app, logged_in):
    other = app.test_client()
    assert post_form(other, "/login", {"email": "consultant@example.com", "password": PASSWORD}).status_code == 302
    r = post_form(logged_in, "/account/password", {"current": PASSWORD, "new": "a brand new secret"})
    assert r.status_code == 302
    assert logged_in.get("/dashboard").status_code == 200
    assert other.get("/dashboard").status_code == 302
    r = post_form(logged_in, "/account/password", {"current": "nope", "new": "another new secret"})
    assert r.status_code == 400 and "not correct" in r.get_data(as_text=True)


def test_next_parameter_cannot_redirect_off_site(client):
    signup(client)
    post_form(client, "/logout", {}, page="/dashboard")
    r = post_form(client, "/login?next=//evil.example/x", {"email": "consultant@example.com",
                                                             "password": PASSWORD}, page="/login")
    assert r.headers["Location"].endswith("/dashboard")


def test_oversized_body_is_413(app, client):
    app.config["MAX_CONTENT_LENGTH"] = 1024
    r = client.post("/signup", data={"email": "x@example.com", "password": "p" * 5000})
    assert r.status_code == 413
    assert _accounts(app) == 0


def test_session_cookie_flags(app, client):
    r = signup(client)
    cookie = r.headers.get("Set-Cookie", "")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
