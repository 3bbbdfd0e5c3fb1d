"""Issue 19 item 4: over the allotment, the alert e-mail's headline keeps the reset date.

The alert is caught by the real SMTP server of the alert tests (aiosmtpd), after an import through
the consultant's pages takes the period over its hours.
"""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

from tests.app.test_alerts import app, smtp  # noqa: F401 - the SMTP server and the app that mails to it
from tests.app.test_routing_pages import _retainers, _upload
from tests.conftest import post_form


def test_the_overage_alert_says_when_the_hours_reset(app, logged_in, smtp):  # noqa: F811
    sink, _ = smtp
    today = dt.datetime.now(dt.UTC).date()
    first = today.replace(day=1)
    reset = (first + dt.timedelta(days=32)).replace(day=1)
    _retainers(app, [("Client 1", "UTC")], start=first.isoformat(), hours="10")
    day = first.isoformat()
    data = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,"
            f"Tags,Amount ()\nAda,ada@example.com,Client 1,P,,Long day,Yes,{day},08:00:00,{day},19:00:00,11:00:00,,\n")
    preview, upload_id = _upload(logged_in, data.encode(), "over.csv")
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=preview)
    over = [m for m in sink.to("consultant@example.com") if "Over this period's hours" in m["Subject"]]
    assert len(over) == 1
    wanted = f"11 of 10 h · 1 h over · resets {reset.day} {reset:%b}"
    assert wanted in over[0].get_body(("plain",)).get_content()
    assert wanted in unescape(over[0].get_body(("html",)).get_content())


def test_the_alert_headline_is_in_the_consultants_unit_as_on_the_page(app, logged_in, smtp):  # noqa: F811
    """A consultant who writes hours as h:mm gets h:mm in the alert e-mail too; the JSON stays decimal."""
    sink, _ = smtp
    r = post_form(logged_in, "/account/settings", {"display_name": "Ada", "contact": "ada@example.com",
                                                   "timezone": "UTC", "rounding_min": "0", "hours_unit": "hm"})
    assert r.status_code == 302, r.get_data(as_text=True)
    first = dt.datetime.now(dt.UTC).date().replace(day=1)
    reset = (first + dt.timedelta(days=32)).replace(day=1)
    _retainers(app, [("Client 1", "UTC")], start=first.isoformat(), hours="10")
    day = first.isoformat()
    data = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,"
            f"Tags,Amount ()\nAda,ada@example.com,Client 1,P,,Long day,Yes,{day},08:00:00,{day},16:30:00,08:30:00,,\n")
    preview, upload_id = _upload(logged_in, data.encode(), "eighty.csv")
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=preview)
    mails = [m for m in sink.to("consultant@example.com") if "80 % of this period's hours" in m["Subject"]]
    assert len(mails) == 1
    wanted = f"8:30 of 10:00 h used · 1:30 h left · resets {reset.day} {reset:%b}"
    assert wanted in mails[0].get_body(("plain",)).get_content()
    assert wanted in unescape(mails[0].get_body(("html",)).get_content())
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
