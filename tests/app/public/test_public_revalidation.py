"""The public page's ETag and Last-Modified: 304 on revalidation, keyed per retainer, never global."""

from __future__ import annotations

import json

import pytest

from app.db import get_db
from hourtab.core.accounts import Account
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import credits, service
from tests.helpers.hours import AUG_20, toggl_csv
from tests.helpers.hours import setup_retainer as _setup

LATE = [("Client 1", "Late fix", "2017-08-19", "21:00:00", "02:30:00")]


@pytest.fixture
def hours_app(app):
    app.config["HOURS_CLOCK"] = lambda: AUG_20
    return app


def setup(app, email="ada@example.com"):
    with app.app_context():
        account, retainer = _setup(get_db(), email=email)
        return account.id, retainer.public_token


def import_into(app, account_id: int, rows) -> None:
    with app.app_context():
        db = get_db()
        with transaction(db):
            import_file(db, db.get(Account, account_id), toggl_csv(rows), "more.csv")


@pytest.mark.parametrize("suffix", ["", ".json", ".csv", ".ics", "/feed.atom", "/statement/2017-08.pdf"])
def test_if_none_match_gives_304_without_a_body(hours_app, suffix):
    _, token = setup(hours_app)
    client = hours_app.test_client()
    first = client.get(f"/h/{token}{suffix}")
    assert first.status_code == 200
    etag, _ = first.get_etag()
    assert etag and not first.headers["ETag"].startswith("W/")  # a strong validator
    assert first.last_modified is not None
    again = client.get(f"/h/{token}{suffix}", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.get_data() == b""
    assert again.headers["ETag"] == first.headers["ETag"]
    assert again.headers["Cache-Control"] == "private, max-age=60"
    since = client.get(f"/h/{token}{suffix}", headers={"If-Modified-Since": first.headers["Last-Modified"]})
    assert since.status_code == 304
    stale = client.get(f"/h/{token}{suffix}", headers={"If-None-Match": '"not-this-one"'})
    assert stale.status_code == 200 and stale.get_data() == first.get_data()


def test_import_in_another_account_keeps_this_etag(hours_app):
    _, token = setup(hours_app)
    other_id, other_token = setup(hours_app, email="bob@example.com")
    client = hours_app.test_client()
    mine, theirs = client.get(f"/h/{token}.json"), client.get(f"/h/{other_token}.json")
    import_into(hours_app, other_id, LATE)
    assert client.get(f"/h/{token}.json").headers["ETag"] == mine.headers["ETag"]
    assert client.get(f"/h/{token}.json", headers={"If-None-Match": mine.headers["ETag"]}).status_code == 304
    changed = client.get(f"/h/{other_token}.json", headers={"If-None-Match": theirs.headers["ETag"]})
    assert changed.status_code == 200 and changed.headers["ETag"] != theirs.headers["ETag"]


def test_top_up_in_another_account_keeps_this_etag(hours_app):
    _, token = setup(hours_app)
    other_id, _ = setup(hours_app, email="bob@example.com")
    client = hours_app.test_client()
    mine = client.get(f"/h/{token}")
    with hours_app.app_context():
        db = get_db()
        other = db.get(Account, other_id)
        with transaction(db):
            credits.add_credit(db, other, service.list_retainers(db, other)[0].id, "topup", "2017-08-02", "10",
                               "Prepaid block")
    assert client.get(f"/h/{token}", headers={"If-None-Match": mine.headers["ETag"]}).status_code == 304


def test_import_in_this_account_changes_etag_and_figures_at_once(hours_app):
    account_id, token = setup(hours_app)
    client = hours_app.test_client()
    before = client.get(f"/h/{token}.json")
    used_before = json.loads(before.get_data())["current"]["used_seconds"]
    import_into(hours_app, account_id, LATE)
    after = client.get(f"/h/{token}.json", headers={"If-None-Match": before.headers["ETag"]})
    assert after.status_code == 200 and after.headers["ETag"] != before.headers["ETag"]
    assert json.loads(after.get_data())["current"]["used_seconds"] == used_before + 2 * 3600 + 30 * 60
