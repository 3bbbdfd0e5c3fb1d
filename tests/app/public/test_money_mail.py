"""The alert e-mail shows the period's amounts beside its hours, as the page does (real SMTP sink)."""

from __future__ import annotations

import datetime as dt

import pytest

from hourtab.core.db import transaction
from hourtab.retainers import service
from tests.helpers.consultant_forms import upload_for_preview
from tests.helpers.forms import post_form
from tests.helpers.mail import alert_text, mailing


@pytest.fixture
def app(make_app, smtp):
    """An app that mails to the test's SMTP server."""
    return make_app(**mailing(smtp[1]))


def test_the_overage_alert_shows_the_amounts_used_and_to_bill(app, logged_in, smtp):
    from app.db import get_db
    from hourtab.core.accounts import find_account

    sink, _ = smtp
    first = dt.datetime.now(dt.UTC).date().replace(day=1)
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = find_account(db, "consultant@example.com")
            service.create_retainer(db, account, "Client 1 retainer", "Client 1", service.parse_terms(
                service.TermsInput(hours="10", start=first.isoformat(), overage="bill", overage_rate="160.5",
                                   fee="1500", hourly_rate="150", currency="EUR")))
    day = first.isoformat()
    data = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,"
            f"Tags,Amount ()\nAda,ada@example.com,Client 1,P,,Long day,Yes,{day},08:00:00,{day},19:00:00,"
            "11:00:00,,\n")
    preview, upload_id = upload_for_preview(logged_in, data.encode(), "day.csv")
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=preview)
    plain, html = alert_text(sink, "Over this period's hours")
    # 11 h at €150, none left, 1 h over at €160.50.
    wanted = "Fee: €1,500.00 · Used: €1,650.00 · Remaining: €0.00 · Overage to bill: €160.50"
    assert wanted in plain and wanted in html
