"""A real browser signs up, logs out, logs in and reaches the dashboard."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture
def tokyo_page(browser):
    """A browser whose clock is in Tokyo (what sign-up offers as the account's zone)."""
    context = browser.new_context(viewport={"width": 1100, "height": 900}, timezone_id="Asia/Tokyo")
    yield context.new_page()
    context.close()


def test_signup_logout_login_in_chromium(live_server, tokyo_page, tmp_path):
    page = tokyo_page
    page.goto(f"{live_server}/signup")
    page.fill("#email", "browser@example.com")
    page.fill("#password", "a long browser password")
    page.fill("#display_name", "Bea Browser")
    # The browser's zone is offered, in view, and signing up confirms it.
    assert page.locator("#timezone").input_value() == "Asia/Tokyo"
    assert "Taken from your browser: Asia/Tokyo" in page.locator("#zone-hint").inner_text()
    page.click("#signup-submit")
    page.wait_for_url(f"{live_server}/dashboard")
    assert page.locator("#dashboard-title").inner_text() == "Dashboard"
    page.goto(f"{live_server}/account/settings")
    assert page.locator("#timezone").input_value() == "Asia/Tokyo"
    page.goto(f"{live_server}/dashboard")

    page.click("text=Log out")
    page.wait_for_url(f"{live_server}/login")
    assert "You are logged out." in page.content()
    page.goto(f"{live_server}/dashboard")
    assert page.url.startswith(f"{live_server}/login")

    page.fill("#email", "browser@example.com")
    page.fill("#password", "wrong password entirely")
    page.click("#login-submit")
    assert "do not match" in page.locator("p.error").first.inner_text()

    page.fill("#email", "browser@example.com")
    page.fill("#password", "a long browser password")
    page.click("#login-submit")
    page.wait_for_url(f"{live_server}/dashboard")
    assert "browser@example.com" in page.content()
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 1000
