"""Issue 19 item 5: a closed period changed after it closed says so, everywhere the client reads it.

Removing an entry of a closed period, restoring it, and a late import into another closed period,
all through the consultant's pages, on the real 3-client Clockify export: each is previewed first
(the closed period, was → now) and changes nothing until confirmed (issue 28); the public page says
"revised on DATE (was X h)", the JSON carries each revision, the statement its number and date, the
Atom feed an item per revision; the figure before each change is kept, not recomputed away.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET

from hourtab.retainers.presentation import format_hours
from tests.helpers.changes import confirm_preview
from tests.helpers.consultant_forms import make_retainers, upload_for_preview
from tests.helpers.documents import html_words, pdf_words
from tests.helpers.forms import post_form
from tests.helpers.multi_client import CLOCKIFY

ATOM = {"a": "http://www.w3.org/2005/Atom"}
H = 3600
#: One of Baykar's five January rows (8 h on 28 Jan 2026; inside the dates a re-export covers).
DROPPED = '"28/01/2026","11:00:00","28/01/2026","19:00:00","08:00:00"'


def _import(client, data: bytes, name: str, **fields) -> int:
    preview, upload_id = upload_for_preview(client, data, name, **fields)
    r = post_form(client, f"/imports/{upload_id}/confirm", fields, page=preview)
    assert r.status_code == 302, r.get_data(as_text=True)
    return upload_id


def _periods(client, token: str) -> dict[str, dict]:
    return {p["label"]: p for p in json.loads(client.get(f"/h/{token}.json").data)["periods"]}


def test_removal_restore_and_late_import_mark_closed_periods_revised(app, logged_in, tmp_path):
    (rid, token), = make_retainers(app, [("Baykar Teknoloji", "UTC")]).values()
    public = app.test_client()
    _import(logged_in, CLOCKIFY.read_bytes(), CLOCKIFY.name, retainer=str(rid))
    january = _periods(public, token)["Jan 2026"]
    assert (january["used_seconds"], january["revised"], january["revisions"]) == (39 * H, None, [])  # loaded, not revised

    lines = CLOCKIFY.read_bytes().split(b"\r\n")
    without = b"\r\n".join(line for line in lines if DROPPED.encode() not in line)
    second = _import(logged_in, without, "without-one.csv")
    flagged = re.findall(r'name="entry" value="(\d+)"', logged_in.get(f"/imports/{second}").get_data(as_text=True))
    assert len(flagged) == 1
    review = f"/imports/{second}/remove?entry={flagged[0]}"
    # Removing it revises January: the preview says so, and nothing changes until it is confirmed.
    preview = post_form(logged_in, f"/imports/{second}/remove", {"entry": flagged[0]}, page=review)
    assert ('<td class="nowrap">Jan 2026</td><td class="num">39&nbsp;h (5)</td><td class="num">31&nbsp;h (4)</td>'
            in preview.get_data(as_text=True))
    assert _periods(public, token)["Jan 2026"]["used_seconds"] == 39 * H
    assert confirm_preview(logged_in, preview).status_code == 302
    today = dt.datetime.now(dt.UTC).date()

    january = _periods(public, token)["Jan 2026"]
    assert january["used_seconds"] == 31 * H
    assert {k: january["revised"][k] for k in ("revision", "reason", "was_used_hours", "used_hours", "on")} == {
        "revision": 1, "reason": "removal", "was_used_hours": "39", "used_hours": "31", "on": today.isoformat()}
    page = html_words(public.get(f"/h/{token}").get_data(as_text=True))
    assert f"Jan 2026 revised on {today:%a} {today.day} {today:%b} {today.year} (was 39 h)" in page
    statement = pdf_words(public.get(f"/h/{token}/statement/2026-01.pdf").data, tmp_path, "jan1.pdf")
    assert f"Revision 1 · revised on {today.isoformat()} (was 39 h used, 5 entries)" in statement
    assert "Hours used (after rounding, 4 entries) 31 h" in statement

    preview = post_form(logged_in, f"/imports/{second}/restore", {}, page=f"/imports/{second}")
    assert 'id="change-preview"' in preview.get_data(as_text=True)
    assert _periods(public, token)["Jan 2026"]["used_seconds"] == 31 * H  # asking changed nothing
    assert confirm_preview(logged_in, preview).status_code == 302
    january = _periods(public, token)["Jan 2026"]
    assert january["used_seconds"] == 39 * H
    assert [(r["revision"], r["reason"], r["was_used_seconds"], r["used_seconds"]) for r in january["revisions"]] == [
        (1, "removal", 39 * H, 31 * H), (2, "restore", 31 * H, 39 * H)]
    assert "(was 31 h)" in html_words(public.get(f"/h/{token}").get_data(as_text=True))
    statement = pdf_words(public.get(f"/h/{token}/statement/2026-01.pdf").data, tmp_path, "jan2.pdf")
    assert "Revision 2 · revised on" in statement and "revision 2," in statement

    # A late import into February (closed): an entry the export did not have before.
    late = b"\r\n".join([lines[0], lines[1].replace(b'"21/01/2026","11:00:00","21/01/2026"',
                                                    b'"10/02/2026","09:00:00","10/02/2026"')])
    feb_before = _periods(public, token)["Feb 2026"]["used_seconds"]
    preview, upload_id = upload_for_preview(logged_in, late, "late.csv", date_order="dmy")  # one row: dmy cannot be told
    assert 'id="revises-warning"' in (page := logged_in.get(preview).get_data(as_text=True))
    assert f"Feb 2026 {format_hours(feb_before)} h → {format_hours(feb_before + 7 * H)} h" in page
    refused = post_form(logged_in, f"/imports/{upload_id}/confirm", {"date_order": "dmy"}, page=preview)
    assert refused.headers["Location"].startswith(f"/imports/{upload_id}/preview")   # the box was not ticked
    assert _periods(public, token)["Feb 2026"]["used_seconds"] == feb_before
    r = post_form(logged_in, f"/imports/{upload_id}/confirm", {"date_order": "dmy", "confirm_change": "yes"}, page=preview)
    assert r.status_code == 302 and r.headers["Location"] == f"/imports/{upload_id}"
    february = _periods(public, token)["Feb 2026"]
    assert february["used_seconds"] == feb_before + 7 * H
    assert (february["revised"]["reason"], february["revised"]["was_used_hours"]) == ("import",
                                                                                      format_hours(feb_before))
    assert _periods(public, token)["Mar 2026"]["revised"] is None

    feed = ET.fromstring(public.get(f"/h/{token}/feed.atom").data)
    titles = [e.findtext("a:title", namespaces=ATOM) for e in feed.findall("a:entry", ATOM)]
    assert "Jan 2026 revised: 31 h used (was 39 h)" in titles
    assert "Jan 2026 revised: 39 h used (was 31 h)" in titles
    assert f"Feb 2026 revised: {format_hours(feb_before + 7 * H)} h used (was {format_hours(feb_before)} h)" in titles
