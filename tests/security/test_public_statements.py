"""Statement PDFs: a month with no period is a fast, counted miss; closed periods are cached;
renders are limited per public link, with room for a client's script to fetch years at once."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select

from app.db import get_db
from app.public.hours import MISS_BUCKET
from hourtab.core.ratelimit import RateEvent
from tests.helpers.hours import AUG_20, setup_retainer


@pytest.fixture
def public(app):
    """A monthly retainer from January 2017, seen on 20 August 2017: January–July closed, August open."""
    clock = {"now": AUG_20}
    app.config.update(HOURS_CLOCK=lambda: clock["now"], PUBLIC_MISS_LIMIT=5, PUBLIC_RENDER_LIMIT=4)
    with app.app_context():
        _, retainer = setup_retainer(get_db(), start="2017-01-01")
        token = retainer.public_token
    yield app, f"/h/{token}/statement", clock


def _renders(app) -> int:
    """Statement renders counted against the test's one public link (kept in the worker's memory)."""
    from hourtab.retainers.models import Retainer

    with app.app_context():
        link = get_db().scalar(select(Retainer.id))
    return app.extensions["hourtab.render_budget"].count(f"retainer:{link}")


def _events(app, bucket: str) -> int:
    with app.app_context():
        return get_db().scalar(select(func.count(RateEvent.id)).where(RateEvent.bucket == bucket))


@pytest.mark.parametrize("month", ["1999-01", "2016-12", "2090-01", "2017-11"])
def test_a_month_without_a_period_is_a_404_counted_as_a_miss_and_renders_nothing(public, month):
    app, base, _ = public
    client = app.test_client()
    statuses = [client.get(f"{base}/{month}.pdf").status_code for _ in range(5)]
    assert statuses == [404] * 5, (statuses, _events(app, MISS_BUCKET))
    r = client.get(f"{base}/{month}.pdf")
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    assert _events(app, MISS_BUCKET) == 5
    assert _renders(app) == 0


def test_a_quarterly_retainers_off_months_are_misses(app):
    app.config.update(HOURS_CLOCK=lambda: AUG_20)
    with app.app_context():
        _, retainer = setup_retainer(get_db(), start="2017-01-01", period="quarterly")
        base = f"/h/{retainer.public_token}/statement"
    client = app.test_client()
    assert client.get(f"{base}/2017-04.pdf").status_code == 200
    assert client.get(f"{base}/2017-05.pdf").status_code == 404
    assert _events(app, MISS_BUCKET) == 1


def test_a_closed_periods_statement_is_cached_across_days(public):
    app, base, clock = public
    client = app.test_client()
    first = client.get(f"{base}/2017-03.pdf")
    assert first.status_code == 200 and first.data.startswith(b"%PDF")
    clock["now"] = AUG_20 + dt.timedelta(days=1, hours=2)
    app.extensions["hourtab.page_cache"].clear()  # the page cache forgets; the closed statement is kept
    again = client.get(f"{base}/2017-03.pdf")
    assert again.status_code == 200 and again.data == first.data
    assert _renders(app) == 1


def test_the_open_periods_statement_is_not_kept_past_the_page_cache(public):
    app, base, clock = public
    client = app.test_client()
    assert client.get(f"{base}/2017-08.pdf").status_code == 200
    clock["now"] = AUG_20 + dt.timedelta(days=1)
    assert client.get(f"{base}/2017-08.pdf").status_code == 200
    assert _renders(app) == 2


def test_renders_are_limited_per_link_and_cached_statements_still_served(public):
    app, base, _ = public
    client = app.test_client()
    for month in ("2017-01", "2017-02", "2017-03", "2017-04"):
        assert client.get(f"{base}/{month}.pdf").status_code == 200
    r = client.get(f"{base}/2017-05.pdf")
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    assert client.get(f"{base}/2017-02.pdf").status_code == 200       # cached: no render, no limit
    other = app.test_client()
    other.environ_base["REMOTE_ADDR"] = "198.51.100.9"
    assert other.get(f"{base}/2017-05.pdf").status_code == 429        # the same link from elsewhere
    with app.app_context():
        _, second = setup_retainer(get_db(), email="grace@example.com", start="2017-01-01")
    assert client.get(f"/h/{second.public_token}/statement/2017-05.pdf").status_code == 200   # another link


def test_a_bookkeeping_script_may_fetch_fifty_statements_of_one_link_in_a_row(app):
    """The default budget, charged as fifty renders of one link would charge it (rendering fifty PDFs
    here would cost seconds): none is refused; the link's next burst past the limit is."""
    from app.public.statement_guard import DEFAULT_RENDER_LIMIT, charge_render
    from hourtab.core.errors import LimitReached

    assert DEFAULT_RENDER_LIMIT >= 50
    with app.test_request_context("/h/x/statement/2017-01.pdf"):
        for _ in range(50):
            charge_render("retainer:1")
        charge_render("retainer:2")
        for _ in range(DEFAULT_RENDER_LIMIT - 50):
            charge_render("retainer:1")
        with pytest.raises(LimitReached):
            charge_render("retainer:1")
