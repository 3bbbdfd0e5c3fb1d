"""Forms as a browser sends them: the page's CSRF token read first, then the POST; a signed-up consultant."""

from __future__ import annotations

import re

PASSWORD = "correct horse battery"


def csrf_token(client, url: str) -> str:
    """Fetch a page as a browser would and read its CSRF token from the form."""
    html = client.get(url).get_data(as_text=True)
    match = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html) or \
        re.search(r'value="([^"]+)"[^>]*name="csrf_token"', html)
    assert match, f"no csrf_token on {url}"
    return match.group(1)


def post_form(client, url: str, data: dict, page: str | None = None, **kwargs):
    """POST a form with the CSRF token taken from ``page`` (default: the same URL)."""
    return client.post(url, data={**data, "csrf_token": csrf_token(client, page or url)}, **kwargs)


def signup(client, email: str = "consultant@example.com", password: str = PASSWORD):
    return post_form(client, "/signup", {"email": email, "password": password, "display_name": "Ada",
                                         "timezone": "UTC"})
