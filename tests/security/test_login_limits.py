"""The log-in limits hold against other spellings of the address and against simultaneous requests."""

from __future__ import annotations

import pytest
import requests

from hourtab.core import accounts
from tests.helpers.forms import PASSWORD, post_form, signup
from tests.helpers.http_sessions import at_once, token_of
from tests.helpers.servers import serve

WRONG = "wrong password!"
#: Spellings that reach the same account as victim@example.com.
SPELLINGS = [
    "victim@ＥＸＡＭＰＬＥ.com",        # full-width domain
    "ｖｉｃｔｉｍ@example.com",          # full-width local part
    "VICTIM@EXAMPLE.COM",
    " victim@example.com ",
    "victim@EXAMPLE\u3002com",          # ideographic full stop, a dot under IDNA
    "Victim@Example.Com",
]


def _from(i: int) -> dict:
    """A different client address for each request, so only the per-e-mail limit is in play."""
    return {"environ_base": {"REMOTE_ADDR": f"198.51.100.{i}"}}


@pytest.fixture
def victim(client):
    signup(client, email="victim@example.com")
    post_form(client, "/logout", {}, page="/dashboard")
    return client


def test_other_spellings_share_the_per_email_limit(victim):
    for i in range(10):
        r = post_form(victim, "/login", {"email": "victim@example.com", "password": WRONG}, **_from(i))
        assert r.status_code == 401
    for j, spelling in enumerate(SPELLINGS):
        r = post_form(victim, "/login", {"email": spelling, "password": PASSWORD}, **_from(100 + j))
        assert r.status_code == 429, (spelling, r.status_code)


def test_each_spelling_logs_in_to_the_same_account_when_not_limited(victim):
    for j, spelling in enumerate(SPELLINGS):
        c = victim.application.test_client()
        r = post_form(c, "/login", {"email": spelling, "password": PASSWORD}, **_from(j))
        assert r.status_code == 302, spelling
        assert c.get("/api/me").get_json()["email"] == "victim@example.com"


@pytest.mark.parametrize("spelling", SPELLINGS + ["victim@xn--exmple-cua.com"])
def test_limit_key_and_lookup_use_one_normalisation(spelling):
    key = accounts.login_key(spelling)
    try:
        canonical = accounts.normalize_email(spelling)
    except accounts.InvalidInput:
        canonical = None
    assert key == canonical


def test_idna_domains_in_either_form_share_a_key():
    assert accounts.login_key("a@bücher.de") == accounts.login_key("a@xn--bcher-kva.de")


@pytest.fixture
def limited_server(make_app, tmp_path):
    """A real HTTP server (threaded) on an app whose log-in limit is 5."""
    app = make_app(HOURTAB_DATA_DIR=str(tmp_path / "d"), HOURTAB_LOGIN_LIMIT="5")
    signup(app.test_client(), email="victim@example.com")
    with serve(app) as base:
        yield base


def test_simultaneous_wrong_logins_evaluate_no_more_than_the_limit(limited_server):
    n = 24

    def prepare(_: int):
        s = requests.Session()
        token = token_of(s.get(f"{limited_server}/login", timeout=30).text)
        return lambda: s.post(f"{limited_server}/login", data={"email": "victim@example.com", "password": WRONG,
                                                              "csrf_token": token},
                              allow_redirects=False, timeout=120).status_code

    statuses = at_once(n, prepare)
    assert set(statuses) <= {401, 429}, statuses
    evaluated = statuses.count(401)
    assert 1 <= evaluated <= 5, statuses
