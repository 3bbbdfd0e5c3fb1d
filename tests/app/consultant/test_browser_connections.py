"""Chromium on Settings → Connections: connect a tracker, Sync now, a refused token shown, remove."""

from __future__ import annotations

import re

import pytest

from tests.helpers.fake_trackers import Toggl, serving
from tests.helpers.sync_runs import TOKEN, at, months

pytestmark = pytest.mark.browser


def no_horizontal_overflow(page) -> bool:
    return page.evaluate("() => document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth + 1")


def test_connections_page_in_chromium(live_server, page):
    fake = Toggl(TOKEN)
    for i in range(3):
        fake.add(at(months()[1], 1 + i), 1800, f"Entry {i}")
    fake.add(at(months()[1], 5), None, "Timer", running=True)
    page.goto(f"{live_server}/signup")
    page.fill("#email", "sync@example.com")
    page.fill("#password", "a long browser password")
    page.click("#signup-submit")
    page.wait_for_url(f"{live_server}/dashboard")

    with serving(toggl=fake) as trackers:
        page.goto(f"{live_server}/account/settings")
        page.click("#connections-link")
        page.wait_for_url(f"{live_server}/account/connections")
        assert page.locator("#no-connections").is_visible()
        page.select_option("#tracker", "toggl")
        page.fill("#token", TOKEN)
        page.fill("#api_url", trackers.url)
        page.click("#connect")
        page.wait_for_url(f"{live_server}/account/connections")
        card = page.locator("article.connection")
        assert card.count() == 1
        assert "3 new, 0 changed, 0 removed, 0 unchanged, 1 running timer not counted yet" in card.inner_text()
        assert "token …b1a0" in card.inner_text() and TOKEN not in page.content()
        assert page.locator("#token").input_value() == ""          # the token is never put back in the form

        fake.add(at(months()[1], 6), 900, "Later")
        card.locator("button.sync-now").click()
        page.wait_for_url(f"{live_server}/account/connections")
        assert "1 new, 0 changed, 0 removed" in page.locator("article.connection").inner_text()

        fake.token = "revoked-in-toggl-0000"
        page.locator("article.connection button.sync-now").click()
        page.wait_for_url(re.compile(r".*/(jobs/\w+|account/connections)$"))
        page.goto(f"{live_server}/account/connections")
        error = page.locator("article.connection .connection-error")
        assert error.is_visible() and "Toggl Track refused the API token (HTTP 403)" in error.inner_text()
        assert page.locator("article.connection button.sync-now").count() == 0   # paused: resume instead
        page.set_viewport_size({"width": 390, "height": 900})
        assert no_horizontal_overflow(page)

        page.locator("article.connection button.remove").click()
        page.wait_for_url(f"{live_server}/account/connections")
        assert "removed and its token deleted" in page.locator("p.flash").inner_text()
        assert page.locator("article.connection").count() == 0
