"""Browser-like sessions against a real HTTP server, and requests fired at the same instant."""

from __future__ import annotations

import re
import threading

import requests


def token_of(html: str) -> str:
    return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html).group(1)


def csrf_of(session: requests.Session, url: str) -> str:
    """The CSRF token of the form on the page at ``url``."""
    return token_of(session.get(url).text)


def healthy(url: str) -> bool:
    """Whether the server at ``url`` answers its health check (False while it is starting or gone)."""
    try:
        return requests.get(f"{url}/healthz", timeout=1).ok
    except requests.RequestException:
        return False


def logged_in_session(base: str, email: str, password: str) -> requests.Session:
    s = requests.Session()
    token = token_of(s.get(f"{base}/login", timeout=30).text)
    r = s.post(f"{base}/login", data={"email": email, "password": password, "csrf_token": token},
               allow_redirects=False, timeout=60)
    assert r.status_code == 302, r.text
    return s


def at_once(n: int, fn) -> list:
    """Run ``fn(i)`` in ``n`` threads released together by a barrier; return the results in order."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        prepared = fn(i)
        barrier.wait(timeout=60)
        results[i] = prepared()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    return results
