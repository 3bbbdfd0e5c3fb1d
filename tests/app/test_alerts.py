"""E-mail alerts end to end, caught by a real SMTP server (aiosmtpd) started in the test.

The client subscribes on the public page and confirms through the link in the real confirmation
e-mail; imports through the consultant's pages cross the thresholds; the queue runs inline.
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import io
import re
from html import unescape
from urllib.parse import urlparse

import pytest
from sqlalchemy import select, update

from tests.app.hours_helpers import toggl_csv
from tests.conftest import csrf_token, free_port, post_form


class Sink:
    """An aiosmtpd handler that keeps every message it is given."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        self.messages.append((list(envelope.rcpt_tos), message))
        return "250 OK"

    def to(self, address: str) -> list[email.message.EmailMessage]:
        return [m for rcpt, m in self.messages if address in rcpt]


@pytest.fixture
def smtp():
    from aiosmtpd.controller import Controller

    sink = Sink()
    controller = Controller(sink, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield sink, f"smtp://127.0.0.1:{controller.port}"
    controller.stop()


@pytest.fixture
def app(database_url, tmp_path, smtp):
    from app import create_app

    app = create_app({"HOURTAB_DATA_DIR": str(tmp_path / "data"), "HOURTAB_DATABASE_URL": database_url,
                      "HOURTAB_SMTP_URL": smtp[1], "HOURTAB_PUBLIC_URL": "https://hours.example.com",
                      "HOURTAB_MAIL_FROM": "HourTab <alerts@hours.example.com>", "TESTING": True})
    yield app
    app.extensions["hourtab.engine"].dispose()


def _retainer(app, start: dt.date):
    from app.db import get_db
    from hourtab.core.accounts import Account
    from hourtab.core.db import transaction
    from hourtab.retainers import service

    with app.app_context():
        db = get_db()
        account = db.scalar(select(Account))
        with transaction(db):
            r = service.create_retainer(db, account, "ML platform retainer", "Client 1", service.parse_terms(
                service.TermsInput(hours="10", start=start.isoformat(), timezone="UTC")))
        return r.id, r.public_token


def _import(client, rows) -> None:
    token = csrf_token(client, "/imports")
    r = client.post("/imports", data={"csrf_token": token, "file": (io.BytesIO(toggl_csv(rows)), "export.csv")},
                    content_type="multipart/form-data")
    preview = r.headers["Location"]
    upload_id = int(re.search(r"/imports/(\d+)/preview", preview).group(1))
    r = post_form(client, f"/imports/{upload_id}/confirm", {}, page=preview)
    assert r.status_code == 302, r.get_data(as_text=True)


def _path(url: str) -> str:
    return urlparse(url).path


def test_crossing_80_percent_mails_a_confirmed_subscriber_once(app, logged_in, smtp):
    sink, _ = smtp
    today = dt.datetime.now(dt.UTC).date()
    retainer_id, token = _retainer(app, today.replace(day=1))
    public = app.test_client()                                      # the client: no session, no login
    page = public.get(f"/h/{token}").get_data(as_text=True)
    assert 'action="/h/' in page and "<script" not in page
    for address in ("client@example.org", "pending@example.org"):
        r = public.post(f"/h/{token}/alerts", data={"email": address})
        assert r.status_code == 200 and address not in r.get_data(as_text=True)
    assert public.post(f"/h/{token}/alerts", data={"email": "not an address"}).status_code == 400

    (confirmation,) = sink.to("client@example.org")
    assert confirmation["Auto-Submitted"] == "auto-generated"
    text = confirmation.get_body(("plain",)).get_content()
    confirm_url = re.search(r"Confirm here: (\S+)", text).group(1)
    assert confirm_url.startswith(f"https://hours.example.com/h/{token}/alerts/confirm/")
    assert public.get(_path(confirm_url)).status_code == 200          # a GET only shows the button
    assert "waiting for confirmation" in logged_in.get(f"/retainers/{retainer_id}").get_data(as_text=True)
    assert "Alerts confirmed" in public.post(_path(confirm_url)).get_data(as_text=True)
    detail = logged_in.get(f"/retainers/{retainer_id}").get_data(as_text=True)
    assert "1 confirmed subscriber" in detail and "client@example.org" not in detail
    sink.messages.clear()

    day = today.replace(day=1).isoformat()
    _import(logged_in, [("Client 1", "Training run triage", day, "00:00:00", "07:00:00")])     # 70 %
    assert sink.messages == []
    _import(logged_in, [("Client 1", "Training run triage", day, "00:00:00", "07:00:00"),
                        ("Client 1", "Profiler capture", day, "07:00:00", "01:30:00")])       # 85 %
    (alert,) = sink.to("client@example.org")
    assert sink.to("pending@example.org") == []
    (copy,) = sink.to("consultant@example.com")
    assert len(sink.messages) == 2

    assert alert["Subject"] == "80 % of this period's hours used · ML platform retainer"
    assert alert["From"] == "HourTab <alerts@hours.example.com>"
    assert alert["Auto-Submitted"] == "auto-generated"
    unsubscribe = alert["List-Unsubscribe"].strip("<>")
    assert unsubscribe.startswith(f"https://hours.example.com/h/{token}/alerts/unsubscribe/")
    assert alert["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    plain = alert.get_body(("plain",)).get_content()
    html = unescape(alert.get_body(("html",)).get_content())
    for body in (plain, html):
        assert "80 % of this period's hours are used." in body
        assert "8.5 of 10 h used" in body and unsubscribe in body
    assert copy["Subject"].startswith("[Copy] 80 %") and "List-Unsubscribe" not in copy

    _import(logged_in, [("Client 1", "Write-up", day, "09:00:00", "00:30:00")])               # 90 %: no repeat
    assert len(sink.messages) == 2

    r = public.post(_path(unsubscribe), data={"List-Unsubscribe": "One-Click"})            # RFC 8058
    assert r.status_code == 200 and "Unsubscribed" in r.get_data(as_text=True)
    _import(logged_in, [("Client 1", "Fix", day, "10:00:00", "01:30:00")])                    # 105 %
    assert sink.to("client@example.org") == [alert]                  # gone: nothing more to them
    (over,) = [m for m in sink.to("consultant@example.com") if m is not copy]
    assert over["Subject"] == "[Copy] Over this period's hours · ML platform retainer"   # 100 % superseded


def test_a_closed_period_sends_its_statement_and_settings_choose_alerts(app, logged_in, smtp):
    from app.db import get_db
    from hourtab.retainers.models import Retainer

    sink, _ = smtp
    today = dt.datetime.now(dt.UTC).date()
    first = today.replace(day=1)
    last_month = (first - dt.timedelta(days=1)).replace(day=1)
    retainer_id, token = _retainer(app, last_month)
    with app.app_context():                      # as if the retainer had existed since last month
        db = get_db()
        db.execute(update(Retainer).where(Retainer.id == retainer_id).values(
            created_at=dt.datetime.combine(last_month, dt.time(), tzinfo=dt.UTC)))
        db.commit()
    r = post_form(logged_in, f"/retainers/{retainer_id}/alerts", {"alert": ["period_closed"], "copy": "1"},
                  page=f"/retainers/{retainer_id}")
    assert r.status_code == 302
    _import(logged_in, [("Client 1", "Old work", last_month.isoformat(), "09:00:00", "09:30:00"),
                        ("Client 1", "New work", first.isoformat(), "09:00:00", "09:00:00")])   # 90 % now
    (closed,) = sink.to("consultant@example.com")           # no 80 % alert: not chosen
    assert "closed: statement attached" in closed["Subject"]
    (pdf,) = list(closed.iter_attachments())
    assert pdf.get_content_type() == "application/pdf"
    assert pdf.get_filename() == f"statement-{last_month:%Y-%m}.pdf"
    assert pdf.get_content().startswith(b"%PDF")
    _import(logged_in, [("Client 1", "More", first.isoformat(), "18:00:00", "00:30:00")])
    assert len(sink.messages) == 1


def test_subscribing_is_rate_limited_and_sends_one_confirmation_per_request(app, logged_in, smtp):
    sink, _ = smtp
    _, token = _retainer(app, dt.datetime.now(dt.UTC).date().replace(day=1))
    public = app.test_client()
    codes = [public.post(f"/h/{token}/alerts", data={"email": "someone@example.org"}).status_code
             for _ in range(6)]
    assert codes == [200] * 5 + [429]
    assert len(sink.to("someone@example.org")) == 5
    assert public.post(f"/h/{token}x/alerts", data={"email": "a@example.org"}).status_code == 404


def test_workers_check_for_closed_periods_without_an_import(app, logged_in, smtp):
    from app.db import get_db
    from app.jobs.worker import queue_periodic_checks
    from hourtab.retainers.models import Retainer

    sink, _ = smtp
    last_month = (dt.datetime.now(dt.UTC).date().replace(day=1) - dt.timedelta(days=1)).replace(day=1)
    retainer_id, _ = _retainer(app, last_month)
    with app.app_context():
        db = get_db()
        db.execute(update(Retainer).where(Retainer.id == retainer_id).values(
            created_at=dt.datetime.combine(last_month, dt.time(), tzinfo=dt.UTC)))
        db.commit()
    assert queue_periodic_checks(app) == 1
    (closed,) = sink.to("consultant@example.com")
    assert "closed: statement attached" in closed["Subject"]
    assert queue_periodic_checks(app) == 0                   # checked recently: not queued again
    assert len(sink.messages) == 1
