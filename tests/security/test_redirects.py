"""The ``next`` parameter after log-in only ever leads to a path on this site."""

from __future__ import annotations

import pytest

from tests.helpers.forms import PASSWORD, post_form, signup

HOSTILE = [
    "/%09/evil.example",       # a tab that the Location header drops, leaving //evil.example
    "/%0D/x",                  # a carriage return: once a 500
    "/%0A/evil.example",
    "//evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "https://evil.example/",
    "javascript:alert(1)",
    "/%E2%80%A8/evil.example",  # a Unicode line separator
    "evil.example",
    "/%00/evil.example",
]


@pytest.fixture
def logged_out(client):
    signup(client)
    post_form(client, "/logout", {}, page="/dashboard")
    return client


@pytest.mark.parametrize("target", HOSTILE)
def test_hostile_next_goes_to_the_dashboard(logged_out, target):
    r = post_form(logged_out, f"/login?next={target}", {"email": "consultant@example.com", "password": PASSWORD},
                  page="/login")
    assert r.status_code == 302, r.get_data(as_text=True)
    location = r.headers["Location"]
    assert location in ("/dashboard", "http://localhost/dashboard"), location


def test_a_same_site_path_is_kept(logged_out):
    r = post_form(logged_out, "/login?next=/retainers%3Fx%3D1", {"email": "consultant@example.com",
                                                               "password": PASSWORD}, page="/login")
    assert r.headers["Location"] in ("/retainers?x=1", "http://localhost/retainers?x=1")
