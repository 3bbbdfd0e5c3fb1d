"""A real browser signs up, logs out, logs in and reaches the dashboard."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_signup_logout_login_in_chromium(live_server, page, tmp_path):
    page.goto(f"{live_server}/signup")
    page.fill("#email", "browser@example.com")
    page.fill("#password", "a long browser password")
    page.fill("#display_name", "Bea Browser")
    page.click("#signup-submit")
    page.wait_for_url(f"{live_server}/dashboard")
    assert page.locator("#dashboard-title").inner_text() == "Dashboard"

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
