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
from hourtab.imports.importer import import_file
from hourtab.timesheets.models import TimeEntry
from incidents.evidence.sample_data import REPRO_TINY as REPRO
from incidents.writeups.models import IncidentEntry, IncidentEvidence, TimelineEvent
from tests.factories import toggl_csv
from tests.helpers.forms import post_form, signup


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


def test_postmortem_and_action_items_are_edited_kept_and_refused_whole(logged_in, app):
    from decimal import Decimal

    from incidents.writeups.models import ActionItem, Incident

    incident_id, edit_url = _new_incident(logged_in)
    form = {"severity": "SEV2", "incident_status": "monitoring", "began_at": "2026-03-01T08:00",
            "detected_at": "", "diagnosed_at": "", "resolved_at": "", "gpu_hour_price": "1,250.50", "currency": "eur"}
    r = post_form(logged_in, f"/incidents/{incident_id}/postmortem", form, page=edit_url, follow_redirects=True)
    assert "Saved." in r.get_data(as_text=True)
    with app.app_context():
        row = get_db().get(Incident, incident_id)
        assert (row.severity, row.incident_status, row.price_currency) == ("SEV2", "monitoring", "EUR")
        assert row.gpu_hour_price == Decimal("1250.50") and row.detected_at is None
        assert row.began_at.isoformat() == "2026-03-01T08:00:00+00:00"
    # A bad status or price is refused with the field's rule, and nothing of the form is written.
    for bad, says in (({"incident_status": "mitigated"}, "investigating, identified, monitoring, resolved"),
                      ({"gpu_hour_price": "-3"}, "between 0 and"), ({"gpu_hour_price": "abc"}, "such as 2.50")):
        r = post_form(logged_in, f"/incidents/{incident_id}/postmortem", {**form, "severity": "SEV1", **bad},
                      page=edit_url)
        assert r.status_code == 400 and says in r.get_data(as_text=True)
    with app.app_context():
        assert get_db().get(Incident, incident_id).severity == "SEV2"

    post_form(logged_in, f"/incidents/{incident_id}/actions", {"text": "Alert on step time", "kind": "detect"},
              page=edit_url)
    with app.app_context():
        action_id = get_db().scalar(select(ActionItem.id).where(ActionItem.incident_id == incident_id))
    r = post_form(logged_in, f"/incidents/{incident_id}/actions/{action_id}",
                  {"text": "Alert when step time doubles", "owner": "ML platform", "due": "2026-04-01",
                   "kind": "detect", "action": "save"}, page=edit_url)
    assert r.headers["Location"].endswith("#actions")
    post_form(logged_in, f"/incidents/{incident_id}/text", {"section_went_well": "The baseline was *ready*."},
              page=edit_url)
    preview = logged_in.get(f"/incidents/{incident_id}/preview").get_data(as_text=True)
    assert "SEV2" in preview and "monitoring" in preview and "Alert when step time doubles" in preview
    assert "ML platform" in preview and "2026-04-01" in preview
    assert "What went well" in preview and "<em>ready</em>" in preview
    editor = logged_in.get(edit_url).get_data(as_text=True)
    assert 'value="2026-03-01T08:00"' in editor and 'value="1250.50"' in editor
    post_form(logged_in, f"/incidents/{incident_id}/actions/{action_id}", {"action": "remove"}, page=edit_url)
    assert _count(app, ActionItem, incident_id=incident_id) == 0
