"""A German and a Japanese client's page in Chromium at a phone's 390 px: in its language, as wide
as the screen, and clean under axe-core (WCAG 2.0/2.1 A and AA)."""

from __future__ import annotations

import pytest

from app.db import get_db
from hourtab.core.accounts import find_account
from hourtab.core.db import transaction
from hourtab.retainers import service
from hourtab.retainers.models import Retainer
from tests.helpers.browser import AXE_TAGS, WIDE
from tests.helpers.money import NOW, money_retainer

pytestmark = pytest.mark.browser

#: language → (currency, the page's heading of past periods, its first session day).
PAGES = {"de": ("EUR", "Frühere Zeiträume", "Di., 1. Dez. 2026"), "ja": ("JPY", "過去の期間", "2026年12月1日(火)")}


@pytest.mark.parametrize("language", list(PAGES))
def test_the_clients_page_in_its_language_on_a_phone(app, live_server, browser, tmp_path, language):
    from axe_playwright_python.sync_playwright import Axe

    currency, past, day = PAGES[language]
    token = money_retainer(app, currency)
    with app.app_context():
        db = get_db()
        with transaction(db):
            retainer = db.query(Retainer).filter_by(public_token=token).one()
            service.update_retainer(db, find_account(db, "ada@example.com"), retainer.id, language=language, now=NOW)

    context = browser.new_context(viewport={"width": 390, "height": 900})
    page = context.new_page()
    assert page.goto(f"{live_server}/h/{token}").status == 200
    assert page.locator("html").get_attribute("lang") == language
    assert page.locator("#past-periods h2").inner_text() == past
    assert page.get_by_text(day).count() == 1
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, page.evaluate(WIDE, 390)
    result = Axe().run(page, options={"runOnly": {"type": "tag", "values": AXE_TAGS}, "resultTypes": ["violations"]})
    assert [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in result.response["violations"]] == []
    shot = tmp_path / f"public-{language}-390.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    context.close()
