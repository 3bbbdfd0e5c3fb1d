"""Chromium reviews an import: the diff preview, then per-row removal with its confirmation and undo."""

from __future__ import annotations

import re

import pytest

from tests.helpers.paths import DATA

pytestmark = pytest.mark.browser

FLORES = (DATA / "toggl_floresfdev_2017-08.csv").read_bytes()


def cards_fit(page) -> bool:
    """No card is wider than itself: wide tables scroll inside their wrapper instead."""
    return page.evaluate("() => [...document.querySelectorAll('.card')].every(c => c.scrollWidth <= c.clientWidth + 1)")


def dates_on_one_line(page, table: str) -> bool:
    """Each date cell of ``table`` is one line of text (not "2017-" / "08-" / "02")."""
    return page.evaluate("""(table) => [...document.querySelectorAll(table + ' tbody td')]
        .filter(td => /^\\d{4}-\\d\\d-\\d\\d/.test(td.textContent.trim()))
        .every(td => { const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length === 1; })""",
                         table)


def upload_and_preview(page, live_server, path) -> None:
    page.goto(f"{live_server}/imports")
    page.set_input_files("#file", str(path))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/imports/\d+/preview.*"))


def test_diff_preview_and_per_row_removal_in_chromium(live_server, page, tmp_path):
    page.goto(f"{live_server}/signup")
    page.fill("#email", "imports@example.com")
    page.fill("#password", "a long browser password")
    page.click("#signup-submit")
    page.wait_for_url(f"{live_server}/dashboard")

    full = tmp_path / "august.csv"
    full.write_bytes(FLORES)
    upload_and_preview(page, live_server, full)
    assert "217 new" in page.locator("#diff").inner_text()
    page.click("#confirm")
    page.wait_for_url(re.compile(r".*/imports/\d+$"))

    lines = FLORES.decode().splitlines(keepends=True)
    client_two = [line for line in lines[1:] if ",Client 2," in line]
    edited = tmp_path / "client2.csv"
    edited.write_text("".join([lines[0], *client_two[2:]]).replace("Misc updates", "Misc updates (edited)", 1))
    page.set_viewport_size({"width": 420, "height": 900})  # a phone
    upload_and_preview(page, live_server, edited)
    assert page.locator("#upload-timezone").inner_text() == "UTC"
    changed = page.locator("#diff-changed").inner_text()
    assert "description: Misc updates → Misc updates (edited)" in changed
    removal = page.locator("#diff-removal tbody tr")
    assert removal.count() == 2 and "Client 1" not in page.locator("#diff-removal").inner_text()
    assert cards_fit(page) and dates_on_one_line(page, "#diff-removal") and dates_on_one_line(page, "#rows")
    page.click("#confirm")
    page.wait_for_url(re.compile(r".*/imports/\d+$"))

    boxes = page.locator("#flagged input[type=checkbox]")
    assert boxes.count() == 2
    boxes.first.check()
    page.click("#review-selected")
    page.wait_for_url(re.compile(r".*/remove\?entry=\d+$"))
    summary = page.locator("#removal-summary").inner_text()
    assert re.search(r"Removing 1 entry takes \d+:\d\d h off the ledger", summary)
    hours = re.search(r"(\d+:\d\d) h", summary).group(1)
    assert f"({hours} h)" in page.locator("#confirm-remove").inner_text()
    assert cards_fit(page)
    page.click("#confirm-remove")
    page.wait_for_url(re.compile(r".*/imports/\d+$"))
    assert f"Removed 1 entry ({hours} h)" in page.locator("p.flash").inner_text()
    assert page.locator("#flagged input[type=checkbox]").count() == 1
    page.click("#restore")
    page.wait_for_url(re.compile(r".*/imports/\d+$"))
    assert "Restored 1 entry" in page.locator("p.flash").inner_text()
    assert page.locator("#flagged input[type=checkbox]").count() == 2
    assert cards_fit(page)
