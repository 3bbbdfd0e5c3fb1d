"""Effective-dated terms: a change applies from a chosen period on; closed periods never change."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from app.db import get_db
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.retainers import service
from hourtab.timesheets.models import TimeEntry, Upload
from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.forms import post_form, signup

NOW = dt.datetime(2026, 12, 5, 9, 0, tzinfo=dt.UTC)
EDIT = {**FORM, "name": "Retainer", "client": "Acme", "start": "2026-10-01", "rounding": "0", "hours": "20"}


@pytest.fixture
def retainer(app, client):
    app.config["HOURS_CLOCK"] = lambda: NOW
    assert signup(client).status_code == 302
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = accounts.find_account(db, "consultant@example.com")
            upload = Upload(account_id=account.id, filename="x.csv", size_bytes=0, sha256="0" * 64)
            db.add(upload)
            db.flush()
            for day in (3, 4, 5, 17):
                start = dt.datetime(2026, 11, day, 9, tzinfo=dt.UTC)
                db.add(TimeEntry(account_id=account.id, upload_id=upload.id, fingerprint=str(day), start_at=start,
                                 end_at=start + dt.timedelta(hours=6), local_date=start.date(), duration_s=6 * 3600,
                                 client="Acme", description=f"work {day}", source_format="toggl", source_line=day))
            r = service.create_retainer(db, account, "Retainer", "Acme", service.parse_terms(
                service.TermsInput(hours="20", start="2026-10-01")))
        return r.id, r.public_token


def test_a_change_from_december_leaves_novembers_statement_identical(app, client, retainer):
    rid, token = retainer
    november = client.get(f"/h/{token}/statement/2026-11.pdf")
    assert november.status_code == 200
    edit = f"/retainers/{rid}/edit"
    assert 'value="2026-12-01" selected' in client.get(edit).get_data(as_text=True) or \
        'selected value="2026-12-01"' in client.get(edit).get_data(as_text=True)
    r = post_form(client, edit, {**EDIT, "hours": "30", "rollover": "all", "effective_from": "2026-12-01"})
    assert r.status_code == 302, r.get_data(as_text=True)
    assert client.get(f"/h/{token}/statement/2026-11.pdf").data == november.data
    periods = {p["label"]: p for p in json.loads(client.get(f"/h/{token}.json").data)["periods"]}
    assert periods["Nov 2026"]["allotment_hours"] == "20" and periods["Nov 2026"]["used_hours"] == "24"
    assert periods["Nov 2026"]["closing_hours"] == "-4"  # 4 h over, carried into December
    assert periods["Dec 2026"]["allotment_hours"] == "30" and periods["Dec 2026"]["opening_hours"] == "-4"


def test_terms_history_is_listed_on_the_page_and_in_the_json(app, client, retainer):
    rid, token = retainer
    post_form(client, f"/retainers/{rid}/edit", {**EDIT, "hours": "30", "effective_from": "2027-01-01"})
    history = json.loads(client.get(f"/h/{token}.json").data)["retainer"]["terms_history"]
    assert [(v["from"], v["hours_per_period"]) for v in history] == [("2026-10-01", "20"), ("2027-01-01", "30")]
    page = client.get(f"/retainers/{rid}").get_data(as_text=True)
    assert "Terms history" in page and "2027-01-01" in page and "30&nbsp;h</span> per month" in page
    # December is still under the old terms: the client's page says so, and lists what comes next.
    public = client.get(f"/h/{token}").get_data(as_text=True)
    assert 'id="terms-history"' in public and "Fri 1 Jan 2027" in public
    assert "20&nbsp;h</span> per month" in client.get(f"/h/{token}").get_data(as_text=True)


def test_a_change_cannot_reach_back_into_a_closed_period(app, client, retainer):
    rid, token = retainer
    r = post_form(client, f"/retainers/{rid}/edit", {**EDIT, "hours": "30", "effective_from": "2026-11-01"})
    assert r.status_code == 400 and "closed" in r.get_data(as_text=True)
    history = json.loads(client.get(f"/h/{token}.json").data)["retainer"]["terms_history"]
    assert len(history) == 1


def test_a_current_period_edit_keeps_a_change_scheduled_for_later(app, client, retainer):
    """Issue 19 item 3: "25 h from Dec 2026" no longer deletes "30 h from Jan 2027"."""
    import re
    import xml.etree.ElementTree as ET
    from html import unescape

    rid, token = retainer
    edit = f"/retainers/{rid}/edit"
    assert post_form(client, edit, {**EDIT, "hours": "30", "effective_from": "2027-01-01"}).status_code == 302
    form = client.get(edit).get_data(as_text=True)
    hours = re.search(r'<input[^>]*name="hours"[^>]*>', form).group(0)
    assert 'value="20"' in hours  # the form starts from the terms in force now, not the scheduled ones
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", form)).split())
    assert "Already scheduled, and kept when you change an earlier period: 30 h per month" in text
    assert "Jan 2027 (replaces the change scheduled for it: 30 h per month" in text
    assert post_form(client, edit, {**EDIT, "hours": "25", "effective_from": "2026-12-01"}).status_code == 302
    history = json.loads(client.get(f"/h/{token}.json").data)["retainer"]["terms_history"]
    assert [(v["from"], v["hours_per_period"]) for v in history] == [
        ("2026-10-01", "20"), ("2026-12-01", "25"), ("2027-01-01", "30")]
    periods = {p["label"]: p for p in json.loads(client.get(f"/h/{token}.json").data)["periods"]}
    assert periods["Dec 2026"]["allotment_hours"] == "25"
    # Both changes reach the client's feed, each dated when it was made.
    feed = ET.fromstring(client.get(f"/h/{token}/feed.atom").data)
    atom = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.findtext("a:title", namespaces=atom) for e in feed.findall("a:entry", atom)]
    assert any(t.startswith("Terms from 1 Dec 2026: 25 h per month") for t in titles)
    assert any(t.startswith("Terms from 1 Jan 2027: 30 h per month") for t in titles)
    assert not any(t.startswith("Terms from 1 Oct 2026") for t in titles)  # the terms it was created with
