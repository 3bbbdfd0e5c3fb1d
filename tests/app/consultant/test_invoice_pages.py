"""The consultant's invoice pages: details saved, a closed month issued once, its PDF downloaded; another
account's invoice is not there; the way back after saving the details stays on this site."""

from __future__ import annotations

import re
import subprocess

from app.db import get_db
from hourtab.retainers import service
from tests.helpers.forms import post_form, signup
from tests.helpers.money import money_retainer

PROFILE = {"name": "Ada Consulting GmbH", "address": "Hauptstr. 1\r\n10115 Berlin", "tax_id": "DE123456789",
           "payment": "IBAN DE02 1203 0000 0000 2020 51", "tax_label": "", "tax_rate": ""}


def test_issue_and_download_an_invoice_from_the_retainers_invoice_page(app, logged_in, tmp_path):
    token = money_retainer(app, "JPY", email="consultant@example.com")
    with app.app_context():
        rid = service.by_token(get_db(), token).id
    page = f"/retainers/{rid}/invoices"
    html = logged_in.get(page).get_data(as_text=True)
    assert 'id="no-profile"' in html and "2026-11" in html and "2026-10" in html and "2026-12" not in html
    r = post_form(logged_in, f"/invoices/profile?next={page}", PROFILE, page="/invoices/profile")
    assert r.status_code == 302 and r.headers["Location"].endswith(page)
    r = post_form(logged_in, "/invoices/profile?next=//elsewhere.example/x", PROFILE, page="/invoices/profile")
    assert r.status_code == 302 and "elsewhere" not in r.headers["Location"]
    r = post_form(logged_in, f"{page}/client", {"name": "株式会社アクメ", "address": "東京都", "tax_id": "T1234567890123"},
                  page=page)
    assert r.status_code == 302
    r = post_form(logged_in, f"{page}/2026-11", {}, page=page)
    assert r.status_code == 302
    r = post_form(logged_in, f"{page}/2026-11", {}, page=page)   # issuing again gives the same invoice
    html = logged_in.get(page).get_data(as_text=True)
    assert html.count("0001, issued") == 1 and "0002" not in html
    link = re.search(r'href="(/invoices/\d+\.pdf)"', html).group(1)
    pdf = logged_in.get(link)
    assert pdf.status_code == 200 and pdf.mimetype == "application/pdf"
    (tmp_path / "i.pdf").write_bytes(pdf.data)
    text = subprocess.run(["pdftotext", "-layout", str(tmp_path / "i.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    # ¥480,000 fee and 5 h over at ¥25,500 = ¥127,500: whole yen, no tax line.
    for wanted in ("Invoice 0001", "株式会社アクメ", "T1234567890123", "¥480,000", "¥127,500", "¥607,500"):
        assert wanted in text, wanted
    assert "Subtotal" not in text
    other = app.test_client()
    assert signup(other, "bob@example.com").status_code == 302
    assert other.get(link).status_code == 404
    assert other.get(page).status_code == 404
