"""Months and periods are cut in the retainer's time zone on every surface a client reads.

Two entries straddle midnight in Istanbul (UTC+3): 31 Oct 19:30 UTC is 31 Oct 22:30 there, and
31 Oct 21:30 UTC is already 1 Nov 00:30. Cutting in UTC would put both in October.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import subprocess
import xml.etree.ElementTree as ET

import pytest

from app.db import get_db
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.retainers import service
from hourtab.timesheets.models import TimeEntry, Upload

NOW = dt.datetime(2026, 11, 10, 9, 0, tzinfo=dt.UTC)
ATOM = {"a": "http://www.w3.org/2005/Atom"}


def _entry(account_id: int, upload_id: int, start: dt.datetime, seconds: int, text: str) -> TimeEntry:
    return TimeEntry(account_id=account_id, upload_id=upload_id, fingerprint=text, start_at=start,
                     end_at=start + dt.timedelta(seconds=seconds), local_date=start.date(), timezone="UTC",
                     duration_s=seconds, client="Acme", project="Platform", description=text,
                     source_format="toggl", source_line=2)


@pytest.fixture
def istanbul(app):
    app.config["HOURS_CLOCK"] = lambda: NOW
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = accounts.Account(email="ada@example.com", password_hash="!", display_name="Ada")
            db.add(account)
            db.flush()
            upload = Upload(account_id=account.id, filename="export.csv", size_bytes=0, sha256="0" * 64,
                            imported_at=dt.datetime(2026, 11, 2, 8, tzinfo=dt.UTC))
            db.add(upload)
            db.flush()
            db.add_all([
                _entry(account.id, upload.id, dt.datetime(2026, 10, 31, 19, 30, tzinfo=dt.UTC), 3600, "late October"),
                _entry(account.id, upload.id, dt.datetime(2026, 10, 31, 21, 30, tzinfo=dt.UTC), 7200, "early November"),
            ])
            db.flush()
            retainer = service.create_retainer(db, account, "Istanbul retainer", "Acme", service.parse_terms(
                service.TermsInput(hours="20", start="2026-10-01", timezone="Europe/Istanbul")))
        return app.test_client(), retainer.public_token


def test_october_entry_is_in_october_on_the_page_and_in_json(istanbul):
    client, token = istanbul
    page = client.get(f"/h/{token}").get_data(as_text=True)
    assert "00:30" in page and "early November" in page and "late October" not in page  # current period: Nov
    assert "Sun 1 Nov 2026" in page
    periods = {p["label"]: p for p in json.loads(client.get(f"/h/{token}.json").data)["periods"]}
    assert periods["Oct 2026"]["used_seconds"] == 3600 and periods["Oct 2026"]["entries"] == 1
    assert periods["Nov 2026"]["used_seconds"] == 7200 and periods["Nov 2026"]["entries"] == 1


def test_october_entry_is_in_october_in_the_csv(istanbul):
    client, token = istanbul
    rows = list(csv.DictReader(io.StringIO(client.get(f"/h/{token}.csv").data.decode("utf-8-sig"))))
    by_text = {r["description"]: r for r in rows}
    assert (by_text["late October"]["date"], by_text["late October"]["start"],
            by_text["late October"]["period"]) == ("2026-10-31", "22:30", "Oct 2026")
    assert (by_text["early November"]["date"], by_text["early November"]["start"],
            by_text["early November"]["period"]) == ("2026-11-01", "00:30", "Nov 2026")


def test_october_entry_is_in_octobers_statement(istanbul, tmp_path):
    client, token = istanbul
    texts = {}
    for month in ("2026-10", "2026-11"):
        pdf = tmp_path / f"{month}.pdf"
        pdf.write_bytes(client.get(f"/h/{token}/statement/{month}.pdf").data)
        texts[month] = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                                      check=True).stdout
    assert "2026-10-31" in texts["2026-10"] and "22:30" in texts["2026-10"] and "late October" in texts["2026-10"]
    assert "early November" not in texts["2026-10"]
    assert "2026-11-01" in texts["2026-11"] and "00:30" in texts["2026-11"]


def test_october_entry_is_in_october_in_the_feed(istanbul):
    client, token = istanbul
    root = ET.fromstring(client.get(f"/h/{token}/feed.atom").data)
    titles = [e.findtext("a:title", namespaces=ATOM) for e in root.findall("a:entry", ATOM)]
    assert "Oct 2026 closed: 1 h used, balance 19 h" in titles
    closed = next(e for e in root.findall("a:entry", ATOM) if e.findtext("a:title", namespaces=ATOM).startswith("Oct"))
    # The period closed at local midnight in Istanbul: 31 Oct 21:00 UTC.
    assert closed.findtext("a:updated", namespaces=ATOM) == "2026-10-31T21:00:00Z"
