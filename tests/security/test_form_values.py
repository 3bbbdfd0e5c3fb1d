"""Malformed form values are a 400 naming the field, never a 500; dates stay within 2000–2100."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import func, select

from hourtab.retainers.models import Retainer, RetainerCredit
from incidents.writeups.models import ActionItem, Incident
from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.forms import csrf_token, post_form


def _count(app, model) -> int:
    with app.app_context():
        from app.db import get_db

        return get_db().scalar(select(func.count(model.id)))


@pytest.fixture
def incident_url(logged_in):
    r = post_form(logged_in, "/incidents", {"title": "Slow"})
    assert r.status_code == 302
    return r.headers["Location"].split("#")[0]


@pytest.fixture
def retainer_url(logged_in):
    r = post_form(logged_in, "/retainers/new", FORM)
    assert r.status_code == 302
    return r.headers["Location"]


def _assert_400_naming(r, field: str) -> str:
    text = html.unescape(r.get_data(as_text=True))
    assert r.status_code == 400, (r.status_code, text[:500])
    assert re.search(field, text, re.I), (field, re.sub(r"\s+", " ", text)[:2000])
    assert "Traceback" not in text
    return text


@pytest.mark.parametrize("path,data,field", [
    ("/timeline", {"at": "garbage", "text": "x"}, "'at'"),
    ("/timeline", {"at": "9999-12-31T10:00", "text": "x"}, "'at'"),
    ("/actions", {"text": "x", "due": "31/31/2026"}, "'due'"),
    ("/actions", {"text": "x", "due": "1900-01-01"}, "'due'"),
    ("/evidence", {"evidence_id": "abc", "role": "incident"}, "'evidence_id'"),
    ("/evidence", {"evidence_id": str(2 ** 70), "role": "incident"}, "'evidence_id'"),
    ("/entries", {"entry_id": str(2 ** 70), "phase": "fix"}, "'entry_id'"),
    ("/entries", {"entry_id": "1e3", "phase": "fix"}, "'entry_id'"),
    ("/entries", {"entry_id": "2**70", "phase": "fix"}, "'entry_id'"),
])
def test_incident_edits(app, logged_in, incident_url, path, data, field):
    token = csrf_token(logged_in, incident_url)
    r = logged_in.post(incident_url + path, data={**data, "csrf_token": token})
    _assert_400_naming(r, field)
    assert _count(app, ActionItem) == 0


def test_new_incident_with_a_bad_retainer_id(app, logged_in):
    r = post_form(logged_in, "/incidents", {"title": "x", "retainer_id": "abc"})
    _assert_400_naming(r, "'retainer_id'")
    assert _count(app, Incident) == 0


@pytest.mark.parametrize("changes,field", [
    ({"hours": "1e308"}, "hours per period"),
    ({"hours": "1e400"}, "hours per period"),
    ({"rollover_cap": "1e400", "rollover": "cap"}, "rollover cap"),
    ({"overage_rate": "1e400"}, "overage rate"),
    ({"start": "9999-12-31"}, "start"),
    ({"start": "1999-12-31"}, "start"),
    ({"reset_day": "99"}, "reset day"),
    ({"rollover_expiry": "99999999999999999999999"}, "expir"),
])
def test_retainer_form(app, logged_in, changes, field):
    r = post_form(logged_in, "/retainers/new", {**FORM, **changes})
    _assert_400_naming(r, field)
    assert _count(app, Retainer) == 0


def test_retainer_edit_refuses_a_far_future_start_and_pages_still_work(app, logged_in, retainer_url):
    r = post_form(logged_in, retainer_url + "/edit", {**FORM, "start": "9999-12-31"})
    _assert_400_naming(r, "start")
    assert logged_in.get(retainer_url).status_code == 200
    assert logged_in.get("/retainers").status_code == 200


@pytest.mark.parametrize("changes,field", [
    ({"hours": "1e308"}, "hours"),
    ({"on": "9999-12-31"}, "date"),
    ({"on": "31/31/2026"}, "date"),
])
def test_credit_form(app, logged_in, retainer_url, changes, field):
    data = {"kind": "topup", "on": "2017-08-02", "hours": "2", "reason": "block", **changes}
    r = post_form(logged_in, retainer_url + "/credits", data, page=retainer_url)
    _assert_400_naming(r, field)
    assert _count(app, RetainerCredit) == 0
