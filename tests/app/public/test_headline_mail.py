"""Issue 19 item 4: over the allotment, the alert e-mail's headline keeps the reset date.

The alert is caught by the real SMTP server of the alert tests (aiosmtpd), after an import through
the consultant's pages takes the period over its hours.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from html import unescape

import pytest

from tests.helpers.consultant_forms import make_retainers, upload_for_preview
from tests.helpers.forms import post_form
from tests.helpers.mail import alert_text, mailing


@pytest.fixture
def app(make_app, smtp):
    """An app that mails to the test's SMTP server."""
    return make_app(**mailing(smtp[1]))


def _work_one_day(flask_app, logged_in, end: str, duration: str) -> dt.date:
    """A 10-hour monthly retainer and one day's work from 08:00 imported through the pages; its reset day."""
    first = dt.datetime.now(dt.UTC).date().replace(day=1)
    make_retainers(flask_app, [("Client 1", "UTC")], start=first.isoformat(), hours="10")
    day = first.isoformat()
    data = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,"
            f"Tags,Amount ()\nAda,ada@example.com,Client 1,P,,Long day,Yes,{day},08:00:00,{day},{end},{duration},,\n")
    preview, upload_id = upload_for_preview(logged_in, data.encode(), "day.csv")
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=preview)
    return (first + dt.timedelta(days=32)).replace(day=1)


def test_the_overage_alert_says_when_the_hours_reset(app, logged_in, smtp):
    sink, _ = smtp
    reset = _work_one_day(app, logged_in, "19:00:00", "11:00:00")
    plain, html = alert_text(sink, "Over this period's hours")
    wanted = f"11 of 10 h · 1 h over · resets {reset.day} {reset:%b}"
    assert wanted in plain and wanted in html


def test_the_alert_headline_is_in_the_consultants_unit_as_on_the_page(app, logged_in, smtp, tmp_path):
    """A consultant who writes hours as h:mm gets h:mm in the alert e-mail, on the page and in the
    statement PDF alike; the JSON stays decimal for programs."""
    sink, _ = smtp
    r = post_form(logged_in, "/account/settings", {"display_name": "Ada", "contact": "ada@example.com",
                                                   "timezone": "UTC", "rounding_min": "0", "hours_unit": "hm"})
    assert r.status_code == 302, r.get_data(as_text=True)
    reset = _work_one_day(app, logged_in, "16:30:00", "08:30:00")
    plain, html = alert_text(sink, "80 % of this period's hours")
    wanted = f"8:30 of 10:00 h used · 1:30 h left · resets {reset.day} {reset:%b}"
    assert wanted in plain and wanted in html
    with app.app_context():
        from app.db import get_db
        from hourtab.retainers.models import Retainer

        token = get_db().query(Retainer).one().public_token
    public = app.test_client()
    page = public.get(f"/h/{token}").get_data(as_text=True)
    shown = re.search(r'<p class="headline[^"]*" id="headline">(.*?)</p>', page).group(1)
    assert unescape(re.sub(r"<[^>]+>", "", shown)).replace("\xa0", " ") == wanted
    report = public.get(f"/h/{token}.json").get_json()
    assert report["current"]["used_hours"] == "8.5", report["current"]
    pdf = tmp_path / "statement.pdf"
    pdf.write_bytes(public.get(f"/h/{token}/statement/{dt.datetime.now(dt.UTC):%Y-%m}.pdf").data)
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"Hours used \(after rounding, 1 entry\)\s+8:30 h", text), text
    assert re.search(r"Closing balance\s+1:30 h", text), text
