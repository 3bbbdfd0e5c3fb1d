"""A German and a Japanese retainer: the client's page, JSON, statement, invoice and feed are in the
retainer's language, with its dates, numbers and money (Babel's locale data, the currency's minor
unit kept), and say so in ``<html lang>``. The expected strings are written out here, not read
from the catalogs under test."""

from __future__ import annotations

import json
import subprocess

import pytest

from app.db import get_db
from hourtab.core.accounts import find_account
from hourtab.core.db import transaction
from hourtab.invoices.invoice_document import invoice_pdf
from hourtab.invoices.service import invoice_view, issue_invoice, save_invoice_profile
from hourtab.retainers import service
from hourtab.retainers.models import Retainer
from tests.helpers.money import NOW, money_retainer

#: language → (currency, what its page, statement, invoice and feed must say).
EXPECTED = {
    "de": ("EUR", {
        "page": ['<html lang="de">', "Frühere Zeiträume", "Einsätze in diesem Zeitraum", "3.000,00\xa0€",
                 "Di., 1. Dez. 2026", "neues Kontingent am 1. Jan.", "Nov. 2026", "h</span> pro Monat",
                 "Für eine Prognose ist es noch zu früh", "gleichmäßiges Tempo", "keine Rundung"],
        "statement": ["Stundenabrechnung", "Schlusssaldo", "Betrag für den Zeitraum", "3.000,00 €",
                      "03.11.2026", "Mehrstunden, zu 160,50 € pro Stunde", "Seite 1 von 1"],
        "invoice": ["Rechnung 0001", "Retainer-Honorar, Nov. 2026 (20 h)", "Gesamt", "3.802,50 €", "Zahlung"],
        "feed": ['xml:lang="de"', "Nov. 2026 abgeschlossen: 33 h genutzt, Saldo -5 h"],
    }),
    "ja": ("JPY", {
        "page": ['<html lang="ja">', "過去の期間", "今期間の作業", "￥480,000", "2026年12月1日(火)",
                 "1月1日にリセット", "2026年11月", "月 <span class=\"nowrap\">20&nbsp;h</span>", "予測にはまだ早すぎます", "均等ペース", "端数処理なし"],
        "statement": ["時間明細書", "期末残高", "期間の金額", "￥480,000", "2026/11/03", "1 / 1 ページ"],
        "invoice": ["請求書 0001", "契約報酬、2026年11月（20 h）", "合計", "￥607,500", "お支払い方法"],
        "feed": ['xml:lang="ja"', "2026年11月 締め: 使用 33 h、残高 -5 h"],
    }),
}


@pytest.fixture(params=list(EXPECTED))
def retainer_in(request, app, client):
    """A priced retainer whose client reads ``language``; its token and what each document must say."""
    language = request.param
    currency, expected = EXPECTED[language]
    token = money_retainer(app, currency)
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = find_account(db, "ada@example.com")
            retainer = db.query(Retainer).filter_by(public_token=token).one()
            service.update_retainer(db, account, retainer.id, language=language, now=NOW)
    return language, token, expected


def pdf_text(data: bytes, tmp_path) -> str:
    path = tmp_path / "document.pdf"
    path.write_bytes(data)
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_the_page_is_in_the_clients_language(client, retainer_in):
    _, token, expected = retainer_in
    page = client.get(f"/h/{token}").get_data(as_text=True)
    for text in expected["page"]:
        assert text in page
    for english in ("Previous periods", "This period's sessions", "per month", "too early", "even pace"):
        assert english not in page


def test_the_json_keeps_its_keys_and_says_its_headline_in_the_language(client, retainer_in):
    language, token, _ = retainer_in
    doc = json.loads(client.get(f"/h/{token}.json").data)
    headline = doc["current"]["headline"]
    assert {"current", "periods", "retainer"} <= set(doc)
    assert ("genutzt" in headline) if language == "de" else ("使用" in headline and "リセット" in headline)
    summary, forecast = doc["retainer"]["terms"]["summary"], doc["current"]["forecast"]
    assert ("pro Monat" in summary) if language == "de" else summary.startswith("月 20 h")
    assert forecast["kind"] == "too_early" and "forecast" not in forecast["text"]


def test_the_statement_is_in_the_clients_language(client, retainer_in, tmp_path):
    _, token, expected = retainer_in
    text = pdf_text(client.get(f"/h/{token}/statement/2026-11.pdf").data, tmp_path)
    for wanted in expected["statement"]:
        assert wanted in text
    assert "Closing balance" not in text and "Page 1" not in text


def test_the_invoice_is_in_the_clients_language(app, retainer_in, tmp_path):
    _, token, expected = retainer_in
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = find_account(db, "ada@example.com")
            retainer = db.query(Retainer).filter_by(public_token=token).one()
            save_invoice_profile(db, account, name="Ada Consultant", address="1 Main St", payment="IBAN DE00 0000")
            invoice = issue_invoice(db, account, retainer.id, "2026-11", now=NOW)
        text = pdf_text(invoice_pdf(invoice_view(db, account, invoice.id, now=NOW)), tmp_path)
    for wanted in expected["invoice"]:
        assert wanted in text
    assert "Invoice" not in text and "Page 1" not in text


def test_the_feed_is_in_the_clients_language(client, retainer_in):
    _, token, expected = retainer_in
    feed = client.get(f"/h/{token}/feed.atom").get_data(as_text=True)
    for text in expected["feed"]:
        assert text in feed
