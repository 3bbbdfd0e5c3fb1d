"""The consultant's forms as the browser sends them: a new retainer, an upload; the sample imported."""

from __future__ import annotations

import datetime as dt
import io
import re

from sqlalchemy import select

from app.db import get_db
from hourtab.core.accounts import Account, find_account
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import service
from tests.helpers.forms import csrf_token, post_form
from tests.helpers.hours import SAMPLE, toggl_csv
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


def upload_for_preview(client, data: bytes, name: str, **fields) -> tuple[str, int]:
    """Upload a file on the imports page; the preview's URL and the upload's id."""
    r = upload(client, data, name, **fields)
    assert r.status_code == 302, r.get_data(as_text=True)
    return r.headers["Location"], int(re.search(r"/imports/(\d+)/preview", r.headers["Location"]).group(1))


def make_retainers(app, clients: list[tuple[str, str]], email: str = "consultant@example.com",
                   start: str = "2026-01-01", hours: str = "40") -> dict[str, tuple[int, str]]:
    """Retainers (client, zone) on ``email``'s account, raised to the pro plan: ``{client: (id, token)}``."""
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = find_account(db, email)
            account.plan = "pro"
            made = {c: service.create_retainer(db, account, f"{c} retainer", c, service.parse_terms(
                service.TermsInput(hours=hours, start=start, timezone=zone))) for c, zone in clients}
        return {c: (r.id, r.public_token) for c, r in made.items()}


def small_retainer(app, start: dt.date) -> tuple[int, str]:
    """A 10-hour monthly retainer for "Client 1" on the only account, from ``start``: (id, public token)."""
    with app.app_context():
        db = get_db()
        account = db.scalar(select(Account))
        with transaction(db):
            r = service.create_retainer(db, account, "ML platform retainer", "Client 1", service.parse_terms(
                service.TermsInput(hours="10", start=start.isoformat(), timezone="UTC")))
        return r.id, r.public_token


def import_rows(client, rows) -> None:
    """Import Toggl ``rows`` (see ``toggl_csv``) through the imports page, preview confirmed."""
    preview, upload_id = upload_for_preview(client, toggl_csv(rows), "export.csv")
    r = post_form(client, f"/imports/{upload_id}/confirm", {}, page=preview)
    assert r.status_code == 302, r.get_data(as_text=True)
