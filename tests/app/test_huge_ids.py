"""Ids no row can have (2**31 overflows PostgreSQL's integer, 2**63 SQLite's) are a 404 on every id route."""

from __future__ import annotations

import re

from tests.helpers.forms import csrf_token

HUGE = (2**31, 2**31 + 7, 2**63, 2**64 + 5)


def _id_routes(app) -> list[tuple[str, str]]:
    """(rule, method) for every route with an ``<int:…>`` part."""
    out = []
    for rule in app.url_map.iter_rules():
        if "<int:" in rule.rule:
            method = "GET" if "GET" in rule.methods else "POST"
            out.append((rule.rule, method))
    return sorted(out)


def test_every_id_route_answers_404_for_ids_no_row_can_have(app, logged_in):
    routes = _id_routes(app)
    assert len(routes) >= 14
    token = csrf_token(logged_in, "/dashboard")
    failures = []
    for rule, method in routes:
        for n in (*HUGE, 2**31 - 1):
            url = re.sub(r"<int:\w+>", str(n), rule)
            url = re.sub(r"<(?:\w+:)?\w+>", "x", url)          # any other part, e.g. a file name
            r = logged_in.open(url, method=method, data={"csrf_token": token} if method == "POST" else None)
            # The largest real id reaches the view, which may refuse the empty form first (400).
            if r.status_code != 404 and not (n == 2**31 - 1 and r.status_code < 500):
                failures.append((method, url, r.status_code))
    assert failures == [], "\n".join(map(str, failures))


def test_the_id_pattern_matches_exactly_the_numbers_up_to_its_bound():
    from app.db import MAX_ID, at_most

    for n in [*range(0, 130), 305, 999, 1000, 2024]:
        pattern = re.compile(f"(?:{at_most(n)})\\Z")
        assert [i for i in range(5000) if pattern.match(str(i))] == list(range(n + 1))
    pattern = re.compile(f"(?:{at_most(MAX_ID)})\\Z")
    assert [bool(pattern.match(v)) for v in ("2147483647", "2147483648", "1999999999", "3000000000", "007")] \
        == [True, False, True, False, False]
