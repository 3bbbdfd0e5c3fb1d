"""The incident editor's small POST forms: each makes one change, then goes back to its part of the editor.

Covers the forms the end-to-end incident test does not post (entries, timeline, detach), the
"Saved." message, and that another account's incident id changes nothing.
"""

from __future__ import annotations

import re

from sqlalchemy import func, select

from app.db import get_db
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.timesheets.importer import import_file
from hourtab.timesheets.models import TimeEntry
from incidents.evidence.sample_data import REPRO_TINY as REPRO
from incidents.writeups.models import IncidentEntry, IncidentEvidence, TimelineEvent
from tests.conftest import post_form, signup
from tests.factories import toggl_csv


def _new_incident(client) -> tuple[int, str]:
    r = post_form(client, "/incidents", {"title": "Slow steps"})
    assert r.status_code == 302
    edit_url = r.headers["Location"]
    return int(re.search(r"/incidents/(\d+)", edit_url).group(1)), edit_url


def _count(app, model, **where) -> int:
    with app.app_context():
        query = select(func.count()).select_from(model).filter_by(**where)
        return get_db().scalar(query)


def test_entries_timeline_and_detach_forms(logged_in, app):
    incident_id, edit_url = _new_incident(logged_in)
    with app.app_context():
        db = get_db()
        me = accounts.get_account(db, "consultant@example.com")
        with transaction(db):
            import_file(db, me, toggl_csv([("Client 1", "debug", "2017-08-01", "09:00:00", "01:00:00"),
                                           ("Client 1", "fix", "2017-08-02", "09:00:00", "02:00:00")]), "t.csv")
        entry_ids = [str(i) for i in db.scalars(select(TimeEntry.id).where(TimeEntry.account_id == me.id))]
    assert len(entry_ids) == 2

    r = post_form(logged_in, f"/incidents/{incident_id}/entries", {"entry_id": entry_ids, "phase": "fix"},
                  page=edit_url)
    assert r.status_code == 302 and r.headers["Location"].endswith(f"/incidents/{incident_id}#entries")
    assert _count(app, IncidentEntry, incident_id=incident_id, phase="fix") == 2
    post_form(logged_in, f"/incidents/{incident_id}/entries", {"entry_id": entry_ids[:1], "action": "remove"},
              page=edit_url)
    assert _count(app, IncidentEntry, incident_id=incident_id) == 1

    r = post_form(logged_in, f"/incidents/{incident_id}/timeline", {"at": "2017-08-01T10:00", "text": "Found it"},
                  page=edit_url)
    assert r.headers["Location"].endswith("#timeline")
    with app.app_context():
        key = get_db().scalar(select(TimelineEvent.key).where(TimelineEvent.incident_id == incident_id))
    post_form(logged_in, f"/incidents/{incident_id}/timeline", {"key": key, "hidden": "1"}, page=edit_url)
    assert _count(app, TimelineEvent, incident_id=incident_id, hidden=True) == 1

    page = logged_in.get(edit_url).get_data(as_text=True)
    with (REPRO / "profile.json").open("rb") as f:
        logged_in.post(f"/incidents/{incident_id}/evidence", content_type="multipart/form-data",
                       data={"profile": (f, "profile.json"),
                             "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)})
    with app.app_context():
        link_id = get_db().scalar(select(IncidentEvidence.id).where(IncidentEvidence.incident_id == incident_id))
    r = post_form(logged_in, f"/incidents/{incident_id}/evidence/{link_id}/detach", {}, page=edit_url)
    assert r.headers["Location"].endswith("#evidence")
    assert _count(app, IncidentEvidence, incident_id=incident_id) == 0


def test_text_form_says_saved_and_a_bad_field_writes_nothing(logged_in, app):
    incident_id, edit_url = _new_incident(logged_in)
    r = post_form(logged_in, f"/incidents/{incident_id}/text", {"title": "Renamed"}, page=edit_url,
                  follow_redirects=True)
    assert "Saved." in r.get_data(as_text=True) and "Renamed" in r.get_data(as_text=True)
    r = post_form(logged_in, f"/incidents/{incident_id}/timeline", {"at": "soon", "text": "x"}, page=edit_url)
    assert r.status_code == 400 and "at" in r.get_data(as_text=True)
    assert _count(app, TimelineEvent, incident_id=incident_id) == 0


def test_another_accounts_incident_is_not_found_and_unchanged(logged_in, app):
    incident_id, _ = _new_incident(logged_in)
    other = app.test_client()
    assert signup(other, "other@example.com").status_code == 302
    r = post_form(other, f"/incidents/{incident_id}/timeline", {"at": "", "text": "mine now"}, page="/incidents")
    assert r.status_code == 404
    assert _count(app, TimelineEvent, incident_id=incident_id) == 0
