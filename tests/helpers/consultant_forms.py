"""The consultant's forms as the browser sends them: a new retainer, an upload; the sample imported."""

from __future__ import annotations

import io

from app.db import get_db
from hourtab.core.accounts import find_account
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from tests.helpers.forms import csrf_token, post_form
from tests.helpers.hours import SAMPLE
from tests.helpers.paths import DATA

#: Every field of the new-retainer form, filled as a consultant would for the sample's "Client 1".
RETAINER_FORM = {
    "name": "ML platform retainer", "client": "Client 1", "hours": "160", "period": "monthly",
    "reset_day": "", "start": "2017-08-01", "timezone": "UTC", "rollover": "none", "rollover_cap": "",
    "rollover_expiry": "", "overage": "carry", "overage_rate": "", "rounding": "6", "rounding_mode": "up",
    "minimum": "0", "match_clients": "", "match_projects": "", "match_tags": "", "match_billable": ""}

#: A real Toggl export (August 2017), as the time tracker writes it.
TOGGL = DATA / "timetrackers/toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_2017-08-31.csv"


def create_retainer(browser_client, **changes):
    """Submit the new-retainer form with ``changes`` over :data:`RETAINER_FORM` (``client`` is a field)."""
    return post_form(browser_client, "/retainers/new", {**RETAINER_FORM, **changes})


def import_sample(app, email: str = "consultant@example.com") -> None:
    """Import the Toggl sample for the account ``email`` directly (not through the upload form)."""
    with app.app_context():
        db = get_db()
        with transaction(db):
            import_file(db, find_account(db, email), SAMPLE.read_bytes(), "export.csv")


def upload(client, data: bytes, name: str = "export.csv", **fields):
    """Upload a file on the imports page, as its form does."""
    token = csrf_token(client, "/imports")
    return client.post("/imports", data={"csrf_token": token, "file": (io.BytesIO(data), name), **fields},
                       content_type="multipart/form-data")
