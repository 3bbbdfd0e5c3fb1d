"""A German and a Japanese client's e-mails are in their language: the confirmation and the pages
around it, and the overage alert with its amounts (real SMTP sink, imports through the pages)."""

from __future__ import annotations

import datetime as dt
import re
from urllib.parse import urlparse

import pytest

from app.db import get_db
from hourtab.core.accounts import find_account
from hourtab.core.db import transaction
from hourtab.retainers import service
from tests.helpers.consultant_forms import import_rows, small_retainer, upload_for_preview
from tests.helpers.forms import post_form
from tests.helpers.mail import alert_text, mailing


@pytest.fixture
def app(make_app, smtp):
    """An app that mails to the test's SMTP server."""
    return make_app(**mailing(smtp[1]))

#: language → what its e-mails and subscription pages must say (written out, not read from catalogs).
EXPECTED = {
    "de": {"confirm_subject": "Stundenbenachrichtigungen für Kundenstunden bestätigen", "confirm_link": "Hier bestätigen: ",
           "inbox": "Sehen Sie in Ihr Postfach", "confirmed": "Benachrichtigungen bestätigt",
           "subject": "Über den Stunden dieses Zeitraums",
           "amounts": "Honorar: 1.500,00\xa0€ · Genutzt: 1.650,00\xa0€ · Verbleibend: 0,00\xa0€ · "
                      "Abzurechnende Mehrstunden: 160,50\xa0€",
           "headline": "11 von 10 h · 1 h darüber · neues Kontingent am", "page": "Stundenseite öffnen"},
    "ja": {"confirm_subject": "Kundenstunden の時間通知を確認してください", "confirm_link": "確認はこちら: ",
           "inbox": "受信トレイをご確認ください", "confirmed": "通知を確認しました",
           "subject": "この期間の時間を超過",
           "amounts": "報酬: €1,500.00 · 使用: €1,650.00 · 残り: €0.00 · 請求予定の超過分: €160.50",
           "headline": "10 h 中 11 h · 1 h 超過 ·", "page": "時間ページを開く"},
}


@pytest.mark.parametrize("language", list(EXPECTED))
def test_the_clients_e_mails_are_in_the_retainers_language(app, logged_in, smtp, language):
    expected = EXPECTED[language]
    sink, _ = smtp
    first = dt.datetime.now(dt.UTC).date().replace(day=1)
    with app.app_context():
        db = get_db()
        with transaction(db):
            account = find_account(db, "consultant@example.com")
            retainer = service.create_retainer(db, account, "Kundenstunden", "Client 1", service.parse_terms(
                service.TermsInput(hours="10", start=first.isoformat(), overage="bill", overage_rate="160.5",
                                   fee="1500", hourly_rate="150", currency="EUR")), language=language)
        token = retainer.public_token

    public = app.test_client()
    answer = public.post(f"/h/{token}/alerts", data={"email": "client@example.org"}).get_data(as_text=True)
    assert expected["inbox"] in answer and f'<html lang="{language}">' in answer
    (confirmation,) = sink.to("client@example.org")
    assert confirmation["Subject"] == expected["confirm_subject"]
    text = confirmation.get_body(("plain",)).get_content()
    confirm_url = re.search(re.escape(expected["confirm_link"]) + r"(\S+)", text).group(1)
    assert expected["confirmed"] in public.post(urlparse(confirm_url).path).get_data(as_text=True)

    day = first.isoformat()
    data = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,"
            f"Tags,Amount ()\nAda,ada@example.com,Client 1,P,,Long day,Yes,{day},08:00:00,{day},19:00:00,"
            "11:00:00,,\n")
    preview, upload_id = upload_for_preview(logged_in, data.encode(), "day.csv")
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=preview)
    alert = [m for m in sink.to("client@example.org") if expected["subject"] in m["Subject"]]
    assert len(alert) == 1
    plain, html = alert_text(sink, expected["subject"])     # the consultant's copy says the same
    for body in (plain, html, alert[0].get_body(("plain",)).get_content()):
        assert expected["headline"] in body
    assert expected["page"] in html and f'<html lang="{language}">' in html
    assert expected["amounts"] in plain


def test_a_german_clients_period_closed_alert_names_the_month_in_german(app, logged_in, smtp, tmp_path):
    import subprocess

    from babel.dates import format_skeleton
    from sqlalchemy import update

    from hourtab.retainers.models import Retainer

    sink, _ = smtp
    first = dt.datetime.now(dt.UTC).date().replace(day=1)
    last_month = (first - dt.timedelta(days=1)).replace(day=1)
    retainer_id, _ = small_retainer(app, last_month)
    with app.app_context():                      # as if the German client's retainer had existed since last month
        db = get_db()
        db.execute(update(Retainer).where(Retainer.id == retainer_id).values(
            created_at=dt.datetime.combine(last_month, dt.time(), tzinfo=dt.UTC), language="de"))
        db.commit()
    post_form(logged_in, f"/retainers/{retainer_id}/alerts", {"alert": ["period_closed"], "copy": "1"},
              page=f"/retainers/{retainer_id}")
    import_rows(logged_in, [("Client 1", "Old work", last_month.isoformat(), "09:00:00", "09:30:00")])
    (closed,) = sink.to("consultant@example.com")
    month = format_skeleton("yMMM", last_month, locale="de")    # e.g. "Nov. 2026"
    assert f"{month} abgeschlossen: Abrechnung anbei" in closed["Subject"]
    plain = closed.get_body(("plain",)).get_content()
    assert "Der Zeitraum ist abgeschlossen; die Abrechnung liegt bei." in plain and f"Zeitraum: {month}" in plain
    (pdf,) = list(closed.iter_attachments())
    path = tmp_path / "statement.pdf"
    path.write_bytes(pdf.get_content())
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    assert "Stundenabrechnung" in text and "Schlusssaldo" in text
