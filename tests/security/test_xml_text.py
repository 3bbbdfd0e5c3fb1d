"""Characters XML 1.0 forbids never reach the Atom feed: they are removed from every text field on input."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from sqlalchemy import select

from hourtab.core.db import transaction
from hourtab.core.values import XML_FORBIDDEN, xml_safe
from hourtab.imports.importer import import_file
from hourtab.retainers.models import Retainer
from hourtab.timesheets.models import TimeEntry
from incidents.writeups import service as incidents
from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.forms import PASSWORD, post_form
from tests.helpers.hours import setup_retainer, toggl_csv

BAD = "\x01\x02\ufffe\uffff\x0b\x1f"


def test_xml_safe_keeps_what_xml_allows():
    assert xml_safe(f"A{BAD}B\tC\nD\r€😀\ud800") == "AB\tC\nD\r€😀"
    assert XML_FORBIDDEN.search("".join(map(chr, range(0x20, 0xD800)))) is None


def test_feed_parses_with_hostile_names_from_the_web_forms(app, client):
    r = post_form(client, "/signup", {"email": "ada@example.com", "password": PASSWORD, "timezone": "UTC",
                                      "display_name": f"Ada{BAD} Lovelace"})
    assert r.status_code == 302
    r = post_form(client, "/retainers/new", {**FORM, "name": f"Retainer{BAD} one", "client": f"Client{BAD} 1"})
    assert r.status_code == 302, r.get_data(as_text=True)
    retainer_id = int(r.headers["Location"].rstrip("/").rsplit("/", 1)[1])
    r = post_form(client, f"/retainers/{retainer_id}/credits",
                  {"kind": "topup", "on": "2017-08-02", "hours": "2", "reason": f"Prepaid{BAD} block"},
                  page=f"/retainers/{retainer_id}")
    assert r.status_code == 302
    with app.app_context():
        from app.db import get_db

        retainer = get_db().scalar(select(Retainer))
    assert retainer.name == "Retainer one" and retainer.client == "Client 1"
    feed = client.get(f"/h/{retainer.public_token}/feed.atom")
    assert feed.status_code == 200
    root = ET.fromstring(feed.data)  # raises on any character XML 1.0 forbids
    text = "".join(root.itertext())
    assert "Retainer one" in text and "Ada Lovelace" in text


def test_time_entry_text_is_cleaned_on_import(db_session):
    # A few control characters only: many would make the file read as binary and be refused whole.
    data = toggl_csv([("Client 1", "tuning\x01\ufffe\uffff run", "2017-08-03", "09:00:00", "01:00:00")])
    data = data.replace(b"Project A", b"Proj\x02")
    account, _ = setup_retainer(db_session, data=data)
    descriptions = db_session.scalars(select(TimeEntry.description)).all()
    projects = db_session.scalars(select(TimeEntry.project)).all()
    assert descriptions == ["tuning run"] and projects == ["Proj"]
    with transaction(db_session):  # the same file again changes nothing: the cleaning is stable
        result = import_file(db_session, account, data, "again.csv")
    assert result.new == 0 and result.changed == 0


def test_incident_text_is_cleaned(db_session):
    account, _ = setup_retainer(db_session)
    with transaction(db_session):
        incident = incidents.create_incident(db_session, account.id, f"Slow{BAD} training")
        incidents.update_incident(db_session, incident, incidents.Edits(
            sections={"summary": f"It{BAD} was slow"}, log_entry=f"Fixed{BAD} it"))
        incidents.add_action(db_session, incident, f"Add{BAD} a check", owner=f"Ada{BAD}")
        incidents.add_event(db_session, incident, None, f"Noticed{BAD}")
    assert incident.title == "Slow training" and incident.log_entry == "Fixed it"
    assert incident.sections["summary"] == "It was slow"
    assert incident.actions[0].text == "Add a check" and incident.actions[0].owner == "Ada"
    assert incident.events[0].text == "Noticed"


def test_run_names_are_cleaned(hostile_run):
    from incidents.evidence.wandb import load_run

    evidence = load_run(hostile_run["file"])
    for text in [evidence.name, evidence.project, *evidence.metrics, *evidence.tags]:
        assert not XML_FORBIDDEN.search(text), repr(text)
    assert evidence.name == hostile_run["clean_name"]


@pytest.mark.parametrize("field", ["name", "client"])
def test_a_name_of_only_forbidden_characters_is_refused(logged_in, field):
    r = post_form(logged_in, "/retainers/new", {**FORM, field: BAD})
    assert r.status_code == 400 and re.search(r"Give the retainer a (name|client)", r.get_data(as_text=True))
