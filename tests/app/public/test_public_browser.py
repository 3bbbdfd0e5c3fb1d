"""Must show #1: a real Toggl export imported through the importer, the public page in Chromium."""

from __future__ import annotations

import re

import pytest

from app.db import get_db
from hourtab.retainers import ledger_reads
from hourtab.retainers.models import Retainer
from hourtab.retainers.presentation import headline
from tests.helpers.hours import AUG_20, setup_retainer

pytestmark = pytest.mark.browser


def test_public_page_in_chromium(app, live_server, page, tmp_path):
    app.config["HOURS_CLOCK"] = lambda: AUG_20
    with app.app_context():
        db = get_db()
        _, retainer = setup_retainer(db, rounding="6")
        token, rid = retainer.public_token, retainer.id
        expected = headline(ledger_reads.retainer_ledger(db, db.get(Retainer, rid), AUG_20).current)

    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    response = page.goto(f"{live_server}/h/{token}")
    assert response.status == 200
    assert response.headers["referrer-policy"] == "no-referrer"
    assert page.locator("#headline").inner_text().replace("\xa0", " ") == expected
    assert re.fullmatch(r"[\d.]+ of 160 h used · [\d.]+ h left · resets 1 Sep", expected)
    assert page.locator("#forecast").inner_text()
    assert page.locator("#burnup-title").text_content().startswith("Hours used from 1 Aug to 31 Aug")
    assert page.locator("svg.burnup:not(.narrow)").is_visible() and not page.locator("svg.burnup.narrow").is_visible()
    assert page.locator('meta[name="robots"]').get_attribute("content") == "noindex"

    html = page.content()
    assert page.locator("script").count() == 0 and "<script" not in html.lower()
    for attr in page.locator("[src], [href]").evaluate_all(
            "els => els.map(e => e.getAttribute('src') || e.getAttribute('href'))"):
        assert attr.startswith(("/", "#", "data:")), attr
    assert all(url.startswith(live_server) or url.startswith("data:") for url in requests), requests

    shot = tmp_path / "public-hours.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    page.set_viewport_size({"width": 375, "height": 800})  # a phone: nothing wider than the screen
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    # The chart drawn for phones replaces the wide one (whose labels would be 6 px tall here).
    assert page.locator("svg.burnup.narrow").is_visible() and not page.locator("svg.burnup:not(.narrow)").is_visible()
    page.screenshot(path=str(tmp_path / "public-hours-phone.png"), full_page=True)
