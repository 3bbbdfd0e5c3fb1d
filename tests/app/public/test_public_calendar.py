"""``/h/<token>.ics``: the client's calendar of resets and statements, read back by ``icalendar``,
linked from the page, and bound to the page's link (rotated or disabled: 404)."""

from __future__ import annotations

import datetime as dt

import icalendar
import pytest

from app.db import get_db
from hourtab.core.accounts import Account
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import service
from tests.helpers.hours import AUG_20, setup_retainer, toggl_csv


@pytest.fixture
def hours_app(app):
    app.config["HOURS_CLOCK"] = lambda: AUG_20
    return app


def _events(response) -> dict[str, icalendar.Event]:
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/calendar" and response.mimetype_params["charset"] == "utf-8"
    return {str(e["SUMMARY"]): e for e in icalendar.Calendar.from_ical(response.get_data(as_text=True)).walk("VEVENT")}


def test_the_calendar_is_linked_parsed_and_dies_with_the_link(hours_app):
    with hours_app.app_context():
        db = get_db()
        account, retainer = setup_retainer(db, hours="160", timezone="America/New_York")
        ids, token = (account.id, retainer.id), retainer.public_token
    client = hours_app.test_client()
    assert f'href="/h/{token}.ics"' in client.get(f"/h/{token}").get_data(as_text=True)

    first = client.get(f"/h/{token}.ics")
    events = _events(first)
    assert first.headers["Cache-Control"] == "private, max-age=60" and first.headers["ETag"]
    start = events["ML platform retainer: retainer starts (160 h)"]
    assert start["DTSTART"].dt == dt.date(2017, 8, 1) and start["URL"] == f"http://localhost/h/{token}"
    assert "midnight (America/New_York)" in start["DESCRIPTION"]
    statement = events["ML platform retainer: statement for Aug 2017"]
    assert statement["DTSTART"].dt == dt.date(2017, 9, 1)
    assert statement["URL"] == f"http://localhost/h/{token}/statement/2017-08.pdf"

    with hours_app.app_context():  # an import bumps the revision: the calendar revalidates to new bytes
        db = get_db()
        with transaction(db):
            import_file(db, db.get(Account, ids[0]), toggl_csv([("Client 1", "Late fix", "2017-08-19", "21:00:00",
                                                                 "02:30:00")]), "more.csv")
    changed = client.get(f"/h/{token}.ics", headers={"If-None-Match": first.headers["ETag"]})
    assert changed.status_code == 200 and changed.headers["ETag"] != first.headers["ETag"]

    with hours_app.app_context():
        db = get_db()
        with transaction(db):
            new_token = service.rotate_token(db, db.get(Account, ids[0]), ids[1]).public_token
    assert client.get(f"/h/{token}.ics").status_code == 404
    rotated = _events(client.get(f"/h/{new_token}.ics"))
    # The same events under the new link, so a calendar app updates them rather than adding copies.
    assert {str(e["UID"]) for e in rotated.values()} == {str(e["UID"]) for e in events.values()}

    with hours_app.app_context():
        db = get_db()
        with transaction(db):
            service.disable_token(db, db.get(Account, ids[0]), ids[1])
    assert client.get(f"/h/{new_token}.ics").status_code == 404
