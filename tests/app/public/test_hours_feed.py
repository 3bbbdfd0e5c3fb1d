"""The Atom feed, read with an XML parser: live links, figures as of each item, honest plurals."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

import pytest

from app.db import get_db
from app.public.links import startup_warnings
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.retainers import service
from hourtab.timesheets.models import TimeEntry, Upload

NOW = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
ATOM = {"a": "http://www.w3.org/2005/Atom"}


def _import(db, account, at: dt.datetime, entries: list[tuple[int, int]]) -> None:
    """An upload imported at ``at`` with entries (day of November 2026, minutes)."""
    upload = Upload(account_id=account.id, filename="x.csv", size_bytes=0, sha256="0" * 64,
                    imported_at=at, created_at=at)
    db.add(upload)
    db.flush()
    for day, minutes in entries:
        start = dt.datetime(2026, 11, day, 9, tzinfo=dt.UTC)
        db.add(TimeEntry(account_id=account.id, upload_id=upload.id, fingerprint=f"{upload.id}-{day}",
                         start_at=start, end_at=start + dt.timedelta(minutes=minutes), local_date=start.date(),
                         duration_s=minutes * 60, client="Acme", source_format="toggl", source_line=day))
    db.flush()
    service.match_entries(db, account.id)


@pytest.fixture
def feed(app):
    app.config["HOURS_CLOCK"] = lambda: NOW
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = accounts.Account(email="ada@example.com", password_hash="!", display_name="Ada")
            db.add(account)
            db.flush()
            retainer = service.create_retainer(db, account, "Retainer", "Acme", service.parse_terms(
                service.TermsInput(hours="20", start="2026-10-01", rounding="15")))
            _import(db, account, dt.datetime(2026, 11, 3, 18, tzinfo=dt.UTC), [(3, 10)])
            _import(db, account, dt.datetime(2026, 11, 12, 18, tzinfo=dt.UTC), [(10, 120), (11, 60)])
    return app, retainer.public_token


def _entries(client, url: str, **kwargs) -> tuple[ET.Element, dict[str, ET.Element]]:
    response = client.get(url, **kwargs)
    assert response.status_code == 200 and response.mimetype == "application/atom+xml"
    root = ET.fromstring(response.data)
    return root, {e.findtext("a:title", namespaces=ATOM): e for e in root.findall("a:entry", ATOM)}


def test_items_state_the_figures_as_of_their_own_time(feed):
    app, token = feed
    _, items = _entries(app.test_client(), f"/h/{token}/feed.atom")
    # 10 minutes rounded up to 15 as the page counts them: 0.25 h, and "1 entry", not "1 entries".
    first = items["Import: 1 entry (0.25 h)"]
    assert first.findtext("a:summary", namespaces=ATOM) == (
        "As of 3 Nov 2026, 18:00 (UTC): Nov 2026: 0.25 of 20 h used · 19.75 h left · resets 1 Dec")
    assert first.findtext("a:updated", namespaces=ATOM) == "2026-11-03T18:00:00Z"
    second = items["Import: 2 entries (3 h)"]
    assert second.findtext("a:summary", namespaces=ATOM).endswith("3.25 of 20 h used · 16.75 h left · resets 1 Dec")
    assert "Oct 2026 closed: 0 h used, balance 20 h" in items


def test_links_use_the_requests_host_when_no_public_url_is_set(feed):
    app, token = feed
    root, items = _entries(app.test_client(), f"/h/{token}/feed.atom", base_url="https://hours.example.org")
    links = {link.get("href") for link in root.iter("{http://www.w3.org/2005/Atom}link")}
    assert f"https://hours.example.org/h/{token}" in links
    assert f"https://hours.example.org/h/{token}/statement/2026-10.pdf" in links
    assert not any("127.0.0.1" in link for link in links)


def test_links_use_the_configured_public_url(feed, make_app, tmp_path):
    _, token = feed
    app = make_app(HOURTAB_DATA_DIR=str(tmp_path / "d"), HOURTAB_PUBLIC_URL="https://hours.ada.example/")
    app.config["HOURS_CLOCK"] = lambda: NOW
    root, _ = _entries(app.test_client(), f"/h/{token}/feed.atom", base_url="http://10.0.0.5:8000")
    links = {link.get("href") for link in root.iter("{http://www.w3.org/2005/Atom}link")}
    assert f"https://hours.ada.example/h/{token}/feed.atom" in links
    assert not any("10.0.0.5" in link for link in links)
    assert startup_warnings(app) == []


def test_start_up_warns_when_the_public_url_is_unset(app):
    (warning,) = startup_warnings(app)
    assert warning.startswith("HOURTAB_PUBLIC_URL is not set")
