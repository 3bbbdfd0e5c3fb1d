"""Chromium, issue 28: the rule name inputs at a phone's 390 px and a desktop's 1280 px, and the inbox.

On the real Toggl export of "Last, First" clients: a second client is added with "Add another
client" (one box per name, so "Devlin, Sean" stays one client), saving shows the preview of the
closed periods it revises, and confirming counts both clients; "Remove" takes the name away again.
Nothing is wider than the screen and axe-core (WCAG 2.0/2.1 A and AA) finds nothing on the form,
the preview and the inbox. The inbox: the dashboard's count, the grouped page, the add-to-rules action
through the same preview. SQLite only: the layout does not depend on the database.
"""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.browser import AXE_TAGS, WIDE
from tests.helpers.forms import PASSWORD

pytestmark = pytest.mark.browser


@pytest.fixture
def app(tmp_path, sqlite_template):
    from app import create_app
    from tests.helpers.lavery_export import NOW

    path = tmp_path / "edits.db"
    shutil.copyfile(sqlite_template, path)
    app = create_app({"HOURTAB_DATA_DIR": str(tmp_path / "data"), "HOURTAB_DATABASE_URL": f"sqlite:///{path}",
                      "TESTING": True})
    app.config["HOURS_CLOCK"] = lambda: NOW
    yield app
    app.extensions["hourtab.engine"].dispose()


def _data(app) -> int:
    from app.db import get_db
    from hourtab.core import accounts
    from hourtab.core.db import transaction
    from hourtab.imports.importer import import_file
    from hourtab.retainers import service
    from tests.helpers.lavery_export import KATHY, LAVERY

    with app.app_context():
        db = get_db()
        with transaction(db):
            me = accounts.create_account(db, "jessica@example.com", PASSWORD, plan="pro")
        with transaction(db):
            retainer = service.create_retainer(db, me, "Methods comparison", KATHY, service.parse_terms(
                service.TermsInput(hours="20", start="2019-03-01", timezone="America/New_York")))
            import_file(db, me, LAVERY.read_bytes(), LAVERY.name)
        return retainer.id


def _check(page, axe, width: int, what: str, problems: list[str]) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth")
    if overflow > width:
        problems.append(f"{width}px {what}: page is {overflow}px wide: {page.evaluate(WIDE, width)}")
    result = axe.run(page, options={"runOnly": {"type": "tag", "values": AXE_TAGS}, "resultTypes": ["violations"]})
    for v in result.response["violations"]:
        problems.append(f"{width}px {what}: axe {v['id']} ({v['impact']}) on {[n['target'] for n in v['nodes']][:3]}")


def _log_in(page, live_server: str) -> None:
    page.goto(f"{live_server}/login")
    page.fill("#email", "jessica@example.com")
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server}/dashboard")


def test_rule_name_inputs_and_the_inbox_in_chromium(app, live_server, browser):
    from axe_playwright_python.sync_playwright import Axe

    rid = _data(app)
    axe, problems = Axe(), []
    edit = f"{live_server}/retainers/{rid}/edit"
    for width in (390, 1280):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        _log_in(page, live_server)
        page.goto(f"{live_server}/inbox")
        _check(page, axe, width, "inbox", problems)
        page.goto(edit)
        rows = page.locator("#match_client-rows .name-row input")
        assert rows.evaluate_all("els => els.map(e => e.value)") == ["Panageas, Kathy", ""]
        page.fill("#match_client-2", "Devlin, Sean")
        page.click("#match_client-rows .add-name")          # a third box, focused, for one more name
        assert rows.count() == 3 and page.evaluate("document.activeElement.id") == "match_client-3"
        assert page.locator("label[for=match_client-3]").inner_text() == "Client 3"
        _check(page, axe, width, "edit form", problems)
        page.click("#retainer-submit")
        page.wait_for_selector("#change-preview")            # Devlin's entries revise closed periods
        assert "unassigned" in page.locator("#preview-moves").inner_text()
        _check(page, axe, width, "preview", problems)
        if width == 390:
            page.click("#cancel-change")                    # nothing saved: the form shows the one client
            page.wait_for_url(edit)
            assert rows.evaluate_all("els => els.map(e => e.value)") == ["Panageas, Kathy", ""]
        else:
            page.click("#confirm-change")
            page.wait_for_selector("p.flash")
            # Devlin worked in seven of the closed months (Apr to Sep, Dec 2019).
            assert "37 entries now count elsewhere. 7 closed periods revised." in page.inner_text("p.flash")
            assert "client “Panageas, Kathy” or “Devlin, Sean”" in page.inner_text("main")
            page.goto(edit)
            page.click("#match_client-rows li:nth-child(2) .remove-name")   # Devlin out again
            assert rows.evaluate_all("els => els.map(e => e.value)") == ["Panageas, Kathy", ""]
            assert page.locator("label[for=match_client-2]").inner_text() == "Client 2"
        context.close()
    assert not problems, "\n".join(problems)


def test_the_inbox_adds_a_client_to_a_retainer_through_the_preview_in_chromium(app, live_server, page):
    _data(app)
    _log_in(page, live_server)
    assert page.inner_text("#inbox-count") == "316 entries, 495.4\xa0h"   # all but Kathy's 78 rows
    page.click("#inbox-open")
    group = page.locator(".inbox-group", has_text="Devlin, Sean · Unmodified transplant")
    assert "15 entries, 29.25\xa0h, 2019-04-29 to 2019-06-21" in group.inner_text()
    group.locator("select").select_option(label="Methods comparison (Panageas, Kathy)")
    group.locator("button[type=submit]").click()
    page.wait_for_selector("#change-preview")
    assert "Devlin" not in page.inner_text("#preview-periods")   # the periods are Kathy's retainer's
    page.click("#confirm-change")
    page.wait_for_selector("p.flash")
    assert "Methods comparison now counts Devlin, Sean: 37 entries moved to it" in page.inner_text("p.flash")
    assert page.locator(".inbox-group", has_text="Devlin, Sean").count() == 0
    page.goto(f"{live_server}/dashboard")
    assert page.inner_text("#inbox-count") == "279 entries, 422.9\xa0h"
