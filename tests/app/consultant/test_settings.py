"""Account settings: what clients see of the consultant, and the defaults of new retainers."""

from __future__ import annotations

import re

from sqlalchemy import select

from app.db import get_db
from hourtab.core.accounts import Account
from tests.helpers.consultant_forms import create_retainer
from tests.helpers.forms import post_form

SETTINGS = {"display_name": "Ada Lovelace", "contact": "hours@ada.example", "timezone": "Europe/Istanbul",
            "rounding_min": "15", "hours_unit": "hm"}


def _account(app) -> Account:
    with app.app_context():
        return get_db().scalar(select(Account))


def test_settings_are_saved_and_become_new_retainer_defaults(app, logged_in):
    r = post_form(logged_in, "/account/settings", SETTINGS)
    assert r.status_code == 302, r.get_data(as_text=True)
    me = _account(app)
    assert (me.display_name, me.contact, me.timezone, me.rounding_min, me.hours_unit) == (
        "Ada Lovelace", "hours@ada.example", "Europe/Istanbul", 15, "hm")
    form = logged_in.get("/retainers/new").get_data(as_text=True)
    assert re.search(r'<option selected value="15">|<option value="15" selected>', form)
    assert 'value="Europe/Istanbul"' in form


def test_bad_settings_are_refused_with_the_field_named(app, logged_in):
    r = post_form(logged_in, "/account/settings", {**SETTINGS, "timezone": "Mars/Olympus"})
    assert r.status_code == 400 and "Unknown time zone &#39;Mars/Olympus&#39;" in r.get_data(as_text=True)
    r = post_form(logged_in, "/account/settings", {**SETTINGS, "contact": "not an address"})
    assert r.status_code == 400 and "e-mail address is not valid" in r.get_data(as_text=True)
    assert _account(app).timezone == "UTC"


def test_client_sees_the_display_name_and_the_email_once(app, logged_in):
    post_form(logged_in, "/account/settings", {**SETTINGS, "display_name": "", "contact": ""})
    page = logged_in.get(create_retainer(logged_in).headers["Location"]).get_data(as_text=True)
    url = re.search(r'id="public-url" type="text" readonly value="http://localhost([^"]+)"', page).group(1)
    public = logged_in.get(url).get_data(as_text=True)
    assert public.count("consultant@example.com") == 2  # header and footer, each once
    assert "consultant@example.com (consultant@example.com)" not in public
    post_form(logged_in, "/account/settings", SETTINGS)
    public = logged_in.get(url).get_data(as_text=True)
    assert "hours from Ada Lovelace (hours@ada.example)" in public
    assert "consultant@example.com" not in public
