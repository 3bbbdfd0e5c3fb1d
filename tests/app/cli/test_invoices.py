"""Invoices: a closed month issued under the account's next number, its PDF read back, and the number
kept when the month is revised (the invoice then says so and what it was issued for)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli
from app.db import get_db
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.retainers import service
from hourtab.timesheets.models import TimeEntry
from tests.helpers.money import money_retainer

#: Where to keep the PDFs and the page image for a person to look at (unset: nowhere).
KEEP = Path(os.environ["HOURTAB_KEEP_INVOICES"]) if os.environ.get("HOURTAB_KEEP_INVOICES") else None


def pdf_text(path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def cli_env(app, database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    token = money_retainer(app, "EUR")
    with app.app_context():
        rid = service.by_token(get_db(), token).id
    return rid


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def revise_november(app) -> None:
    """One more hour of work on 20 November, after November closed: the month is revised."""
    with app.app_context():
        db = get_db()
        account = accounts.find_account(db, "ada@example.com")
        with transaction(db):
            start = dt.datetime(2026, 11, 20, 9, tzinfo=dt.UTC)
            upload_id = db.query(TimeEntry).first().upload_id
            db.add(TimeEntry(account_id=account.id, upload_id=upload_id, fingerprint="late", start_at=start,
                             end_at=start + dt.timedelta(hours=1), local_date=start.date(), duration_s=3600,
                             client="Acme", description="late entry", source_format="toggl", source_line=99))
            db.flush()
            service.match_entries(db, account.id)


def test_an_invoice_is_numbered_per_account_and_keeps_its_number_when_the_month_is_revised(app, cli_env,
                                                                                           tmp_path):
    rid = cli_env
    r = invoke("invoice", "issue", str(rid), "--account", "ada@example.com", "--month", "2026-11")
    assert r.exit_code == 2 and "invoicing details" in r.output
    r = invoke("invoice", "profile", "--account", "ada@example.com", "--name", "Ada Consulting GmbH",
               "--address", "Hauptstr. 1\\n10115 Berlin", "--tax-id", "DE123456789",
               "--payment", "IBAN DE02 1203 0000 0000 2020 51, within 14 days", "--tax-label", "VAT",
               "--tax-rate", "19")
    assert r.exit_code == 0, r.output
    r = invoke("invoice", "client", str(rid), "--account", "ada@example.com", "--name", "Acme Corp.",
               "--address", "1 Main St\\nSpringfield", "--tax-id", "US-99-1234567")
    assert r.exit_code == 0, r.output
    ahead = dt.date.today() + dt.timedelta(days=40)
    r = invoke("invoice", "issue", str(rid), "--account", "ada@example.com", "--month", f"{ahead:%Y-%m}")
    assert r.exit_code == 2 and "closed month" in r.output   # a month that has not closed yet
    first = tmp_path / "first.pdf"
    r = invoke("invoice", "issue", str(rid), "--account", "ada@example.com", "--month", "2026-11",
               "--out", str(first), "--json")
    assert r.exit_code == 0, r.output
    issued = json.loads(r.output)
    # November: the €3,000 fee and 5 h over at €160.50 = €802.50; 19 % VAT on €3,802.50 = €722.48.
    assert issued["number"] == "0001" and issued["total"] == "4524.98" and issued["currency"] == "EUR"
    text = pdf_text(first)
    for wanted in ("Invoice 0001", "Ada Consulting GmbH", "DE123456789", "Acme Corp.", "US-99-1234567",
                   "€3,000.00", "5 h at €160.50 per hour", "€802.50", "€3,802.50", "VAT (19 %)", "€722.48", "€4,524.98", "IBAN DE02"):
        assert wanted in text, wanted
    assert "Revised" not in text
    r = invoke("invoice", "issue", str(rid), "--account", "ada@example.com", "--month", "2026-10",
               "--out", str(tmp_path / "october.pdf"), "--json")
    assert r.exit_code == 0 and json.loads(r.output)["number"] == "0002", r.output

    revise_november(app)
    again = tmp_path / "again.pdf"
    r = invoke("invoice", "issue", str(rid), "--account", "ada@example.com", "--month", "2026-11",
               "--out", str(again), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["number"] == "0001"   # the same invoice: never renumbered
    text = pdf_text(again)
    # 6 h over now: €963.00; (€3,963.00 + 19 %) = €4,715.97, and it says what it was issued for.
    assert "Invoice 0001" in text and "€963.00" in text and "€4,715.97" in text
    assert "Revised." in text and "revision 1" in text and "€4,524.98" in " ".join(text.split())
    subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", str(again), str(tmp_path / "page")],
                   check=True)
    assert (tmp_path / "page-1.png").stat().st_size > 5000
    if KEEP:
        for path in (first, again, tmp_path / "page-1.png"):
            (KEEP / path.name).write_bytes(path.read_bytes())


def test_an_issued_invoice_keeps_the_details_and_tax_it_was_issued_with(app, cli_env, tmp_path):
    """The client holds the invoice: editing one's details or tax rate later changes the next invoice only."""
    rid = cli_env
    profile = ["invoice", "profile", "--account", "ada@example.com", "--address", "Hauptstr. 1"]
    assert invoke(*profile, "--name", "Ada Consulting GmbH", "--tax-label", "VAT", "--tax-rate", "19").exit_code == 0
    assert invoke("invoice", "client", str(rid), "--account", "ada@example.com", "--name", "Acme Corp.").exit_code == 0
    issue = ["invoice", "issue", str(rid), "--account", "ada@example.com", "--json"]
    r = invoke(*issue, "--month", "2026-11", "--out", str(tmp_path / "november.pdf"))
    assert r.exit_code == 0 and json.loads(r.output)["total"] == "4524.98", r.output

    assert invoke(*profile, "--name", "Ada Lovelace Ltd", "--tax-label", "VAT", "--tax-rate", "7").exit_code == 0
    assert invoke("invoice", "client", str(rid), "--account", "ada@example.com", "--name", "Acme Inc.").exit_code == 0
    r = invoke(*issue, "--month", "2026-11", "--out", str(tmp_path / "november-again.pdf"))
    assert r.exit_code == 0, r.output
    text = pdf_text(tmp_path / "november-again.pdf")
    assert "Ada Consulting GmbH" in text and "Acme Corp." in text and "VAT (19 %)" in text and "€4,524.98" in text
    assert "Ada Lovelace Ltd" not in text and "Acme Inc." not in text
    r = invoke(*issue, "--month", "2026-10", "--out", str(tmp_path / "october.pdf"))
    text = pdf_text(tmp_path / "october.pdf")
    assert r.exit_code == 0 and "Ada Lovelace Ltd" in text and "Acme Inc." in text and "VAT (7 %)" in text
