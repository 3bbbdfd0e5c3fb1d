"""Issue 19 item 4: over the allotment, the alert e-mail's headline keeps the reset date.

The alert is caught by the real SMTP server of the alert tests (aiosmtpd), after an import through
the consultant's pages takes the period over its hours.
"""

from __future__ import annotations

import datetime as dt
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
