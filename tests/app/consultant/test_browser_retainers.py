"""Chromium: account settings, the confirmation before rotating or disabling a link, the phone layout."""

from __future__ import annotations

import datetime as dt

import pytest

from app.db import get_db
from tests.helpers.hours import setup_retainer

pytestmark = pytest.mark.browser


def _sign_up(page, live_server: str) -> None:
    page.goto(f"{live_server}/signup")
    page.fill("#email", "browser@example.com")
    page.fill("#password", "a long browser password")
    page.click("#signup-submit")
    page.wait_for_url(f"{live_server}/dashboard")


def _new_retainer(page, live_server: str) -> str:
    page.click("header.site >> text=Retainers")
    page.click("text=New retainer")
    page.fill("#name", "Phone retainer")
    page.fill("#client", "Acme")
    page.fill("#hours", "20")
    page.click("#retainer-submit")
    page.wait_for_selector("#public-url")
    return page.input_value("#public-url")


def test_settings_in_chromium(live_server, page):
    _sign_up(page, live_server)
    page.click("header.site >> text=Settings")
    page.fill("#display_name", "Bea Browser")
    page.fill("#contact", "hours@bea.example")
    page.select_option("#timezone", "Europe/Istanbul")
    page.select_option("#rounding_min", "15")
    page.select_option("#hours_unit", "hm")
    page.click("#save-settings")
    assert "Settings saved" in page.locator("p.flash").inner_text()
    page.reload()
    assert page.input_value("#display_name") == "Bea Browser"
    assert page.input_value("#timezone") == "Europe/Istanbul" and page.input_value("#hours_unit") == "hm"

    page.goto(f"{live_server}/retainers/new")  # the settings are the new retainer's defaults
    assert page.input_value("#timezone") == "Europe/Istanbul" and page.input_value("#rounding") == "15"
    url = _new_retainer(page, live_server)
    page.goto(url)
    assert page.locator("header p").inner_text() == "Acme · hours from Bea Browser (hours@bea.example)"
    assert page.locator("#headline").inner_text().replace("\xa0", " ").startswith("0:00 of 20:00 h used")


def test_rotate_and_disable_ask_first_in_chromium(live_server, page, browser):
    _sign_up(page, live_server)
    url = _new_retainer(page, live_server)
    detail = page.url
    # The client's own browser context; its request API skips the HTTP cache, so each check is fresh.
    client = browser.new_context()

    def status(link: str) -> int:
        return client.request.get(link).status

    page.click("#rotate-token")
    assert page.locator("#confirm-card h1").inner_text() == "Make a new public link?"
    page.click("#cancel")
    assert page.url == detail and page.input_value("#public-url") == url
    page.click("#rotate-token")
    page.click("#confirm")
    assert "old one no longer works" in page.locator("p.flash").inner_text()
    rotated = page.input_value("#public-url")
    assert rotated != url and status(url) == 404 and status(rotated) == 200

    page.click("#disable-token")
    assert page.locator("#confirm-card h1").inner_text() == "Disable the public page?"
    assert status(rotated) == 200  # asking changed nothing
    page.click("#confirm")
    assert "Public page disabled" in page.locator("p.flash").inner_text()
    assert status(rotated) == 404
    page.click("#enable-token")
    assert "same link as before" in page.locator("p.flash").inner_text()
    assert page.input_value("#public-url") == rotated and status(rotated) == 200
    client.close()


def test_public_page_on_a_phone(app, live_server, browser, tmp_path):
    app.config["HOURS_CLOCK"] = lambda: dt.datetime(2017, 10, 20, 12, tzinfo=dt.UTC)  # Aug and Sep closed
    with app.app_context():
        _, retainer = setup_retainer(get_db(), rounding="6")
        token = retainer.public_token
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone = context.new_page()
    assert phone.goto(f"{live_server}/h/{token}").status == 200
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    links = phone.locator("a.statement-link")
    assert links.count() == 3  # Aug, Sep (previous periods) and this period's, in the footer
    for i in range(links.count()):
        link = links.nth(i)
        link.scroll_into_view_if_needed()
        assert link.is_visible()
        box = link.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, link.get_attribute("href")
    phone.screenshot(path=str(tmp_path / "phone.png"), full_page=True)
    context.close()
