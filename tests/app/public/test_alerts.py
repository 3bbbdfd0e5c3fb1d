"""E-mail alerts end to end, caught by a real SMTP server (aiosmtpd) started in the test.

The client subscribes on the public page and confirms through the link in the real confirmation
e-mail; imports through the consultant's pages cross the thresholds; the queue runs inline.
"""

from __future__ import annotations

import datetime as dt
import re
from html import unescape
from urllib.parse import urlparse

import pytest
from sqlalchemy import update

from tests.helpers.consultant_forms import import_rows, small_retainer
from tests.helpers.forms import post_form
from tests.helpers.mail import header_line, mailing


@pytest.fixture
def app(make_app, smtp):
    """An app that mails to the test's SMTP server."""
    return make_app(**mailing(smtp[1]))


def _path(url: str) -> str:
    return urlparse(url).path


def _settings(client, name: str, contact: str) -> None:
    r = post_form(client, "/account/settings", {"display_name": name, "contact": contact, "timezone": "UTC",
                                                "rounding_min": "0", "hours_unit": "decimal"})
    assert r.status_code == 302, r.get_data(as_text=True)


def _subscribe(public, sink, token: str, address: str) -> str:
    """Subscribe and confirm through the real confirmation e-mail; returns that e-mail's forget link."""
    assert public.post(f"/h/{token}/alerts", data={"email": address}).status_code == 200
    text = sink.to(address)[-1].get_body(("plain",)).get_content()
    confirm_url = re.search(r"Confirm here: (\S+)", text).group(1)
    assert "Alerts confirmed" in public.post(_path(confirm_url)).get_data(as_text=True)
    return re.search(r"Forget this address now: (\S+)", text).group(1)


def test_a_confirmation_sent_before_the_link_was_rotated_still_confirms(app, logged_in, smtp):
    sink, _ = smtp
    retainer_id, token = small_retainer(app, dt.datetime.now(dt.UTC).date().replace(day=1))
    public = app.test_client()
    assert public.post(f"/h/{token}/alerts", data={"email": "client@example.org"}).status_code == 200
    text = sink.to("client@example.org")[-1].get_body(("plain",)).get_content()
    confirm_url = re.search(r"Confirm here: (\S+)", text).group(1)
    assert token not in confirm_url
    r = post_form(logged_in, f"/retainers/{retainer_id}/token/rotate", {}, page=f"/retainers/{retainer_id}")
    assert r.status_code == 302
    assert public.get(f"/h/{token}").status_code == 404                 # the old page link is gone
    page = public.get(_path(confirm_url)).get_data(as_text=True)
    assert "Confirm e-mail alerts" in page and "/h/" not in page         # the new link is not given away
    assert "Alerts confirmed" in public.post(_path(confirm_url)).get_data(as_text=True)
    assert "1 confirmed subscriber" in logged_in.get(f"/retainers/{retainer_id}").get_data(as_text=True)


def test_crossing_80_percent_mails_a_confirmed_subscriber_once(app, logged_in, smtp):
    sink, _ = smtp
    _settings(logged_in, "Ada Lovelace", "hours@ada.example")
    today = dt.datetime.now(dt.UTC).date()
    retainer_id, token = small_retainer(app, today.replace(day=1))
    public = app.test_client()                                      # the client: no session, no login
    page = public.get(f"/h/{token}").get_data(as_text=True)
    assert 'action="/h/' in page and "<script" not in page
    for address in ("client@example.org", "pending@example.org"):
        r = public.post(f"/h/{token}/alerts", data={"email": address})
        assert r.status_code == 200 and address not in r.get_data(as_text=True)
    assert public.post(f"/h/{token}/alerts", data={"email": "not an address"}).status_code == 400

    (confirmation,) = sink.to("client@example.org")
    assert confirmation["Auto-Submitted"] == "auto-generated"
    assert confirmation["From"] == "Ada Lovelace via HourTab <alerts@hours.example.com>"
    assert confirmation["Reply-To"] == "hours@ada.example"
    text = confirmation.get_body(("plain",)).get_content()
    assert "over the period" not in text and "when more hours are worked than the period holds" in text
    confirm_url = re.search(r"Confirm here: (\S+)", text).group(1)
    assert confirm_url.startswith("https://hours.example.com/alerts/confirm/") and token not in text
    assert public.get(_path(confirm_url)).status_code == 200          # a GET only shows the button
    assert "waiting for confirmation" in logged_in.get(f"/retainers/{retainer_id}").get_data(as_text=True)
    assert "Alerts confirmed" in public.post(_path(confirm_url)).get_data(as_text=True)
    detail = logged_in.get(f"/retainers/{retainer_id}").get_data(as_text=True)
    assert "1 confirmed subscriber" in detail and "client@example.org" not in detail
    sink.messages.clear()

    day = today.replace(day=1).isoformat()
    import_rows(logged_in, [("Client 1", "Training run triage", day, "00:00:00", "07:00:00")])     # 70 %
    assert sink.messages == []
    import_rows(logged_in, [("Client 1", "Training run triage", day, "00:00:00", "07:00:00"),
                        ("Client 1", "Profiler capture", day, "07:00:00", "01:30:00")])       # 85 %
    (alert,) = sink.to("client@example.org")
    assert sink.to("pending@example.org") == []
    (copy,) = sink.to("consultant@example.com")
    assert len(sink.messages) == 2

    assert alert["Subject"] == "80 % of this period's hours used · ML platform retainer"
    # From the operator's address in the consultant's name; answers reach the consultant's contact.
    assert alert["From"] == "Ada Lovelace via HourTab <alerts@hours.example.com>"
    assert alert["Reply-To"] == "hours@ada.example"
    assert alert["Auto-Submitted"] == "auto-generated"
    unsubscribe = alert["List-Unsubscribe"].strip("<>")
    assert unsubscribe.startswith("https://hours.example.com/alerts/unsubscribe/")
    assert alert["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # On the wire as written: mail clients read the URL only when it is not RFC 2047-encoded.
    assert header_line(alert.raw_bytes, "List-Unsubscribe") == f"<{unsubscribe}>".encode("ascii")
    plain = alert.get_body(("plain",)).get_content()
    html = unescape(alert.get_body(("html",)).get_content())
    for body in (plain, html):
        assert "80 % of this period's hours are used." in body
        assert "8.5 of 10 h used" in body and unsubscribe in body
    assert copy["Subject"].startswith("[Copy] 80 %") and "List-Unsubscribe" not in copy

    import_rows(logged_in, [("Client 1", "Write-up", day, "09:00:00", "00:30:00")])               # 90 %: no repeat
    assert len(sink.messages) == 2

    r = public.post(_path(unsubscribe), data={"List-Unsubscribe": "One-Click"})            # RFC 8058
    assert r.status_code == 200 and "Unsubscribed" in r.get_data(as_text=True)
    import_rows(logged_in, [("Client 1", "Fix", day, "10:00:00", "01:30:00")])                    # 105 %
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
    retainer_id, token = small_retainer(app, last_month)
    with app.app_context():                      # as if the retainer had existed since last month
        db = get_db()
        db.execute(update(Retainer).where(Retainer.id == retainer_id).values(
            created_at=dt.datetime.combine(last_month, dt.time(), tzinfo=dt.UTC)))
        db.commit()
    r = post_form(logged_in, f"/retainers/{retainer_id}/alerts", {"alert": ["period_closed"], "copy": "1"},
                  page=f"/retainers/{retainer_id}")
    assert r.status_code == 302
    import_rows(logged_in, [("Client 1", "Old work", last_month.isoformat(), "09:00:00", "09:30:00"),
                        ("Client 1", "New work", first.isoformat(), "09:00:00", "09:00:00")])   # 90 % now
    (closed,) = sink.to("consultant@example.com")           # no 80 % alert: not chosen
    assert "closed: statement attached" in closed["Subject"]
    (pdf,) = list(closed.iter_attachments())
    assert pdf.get_content_type() == "application/pdf"
    assert pdf.get_filename() == f"statement-{last_month:%Y-%m}.pdf"
    assert pdf.get_content().startswith(b"%PDF")
    import_rows(logged_in, [("Client 1", "More", first.isoformat(), "18:00:00", "00:30:00")])
    assert len(sink.messages) == 1


def test_subscribing_is_rate_limited_and_sends_one_confirmation_per_request(app, logged_in, smtp):
    sink, _ = smtp
    _, token = small_retainer(app, dt.datetime.now(dt.UTC).date().replace(day=1))
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
    retainer_id, _ = small_retainer(app, last_month)
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


def _rotate(client, retainer_id: int) -> None:
    page = f"/retainers/{retainer_id}/token/rotate"
    assert post_form(client, page, {}, page=page).status_code == 302


def test_unsubscribe_links_already_sent_keep_working_after_the_public_link_is_rotated(app, logged_in, smtp):
    sink, _ = smtp
    _settings(logged_in, "Ada Lovelace", "hours@ada.example")
    first = dt.datetime.now(dt.UTC).date().replace(day=1)
    retainer_id, token = small_retainer(app, first)
    public = app.test_client()
    forget = _subscribe(public, sink, token, "early@example.org")     # from the confirmation e-mail
    for address in ("one-click@example.org", "stays@example.org"):
        _subscribe(public, sink, token, address)
    day = first.isoformat()
    import_rows(logged_in, [("Client 1", "Triage", day, "00:00:00", "08:30:00")])                  # 85 %
    _, alert = sink.to("one-click@example.org")                           # confirmation, then the alert
    assert alert["Subject"].startswith("80 %")
    one_click = alert["List-Unsubscribe"].strip("<>")
    # As the release before this one wrote them: under the page's link (the path still answers).
    old_style = f"/h/{token}/alerts/unsubscribe/{one_click.rsplit('/', 1)[1]}"
    assert "Stop e-mail alerts" in public.get(old_style).get_data(as_text=True)

    _rotate(logged_in, retainer_id)
    assert public.get(f"/h/{token}").status_code == 404                 # the old page is gone ...
    r = public.post(_path(one_click), data={"List-Unsubscribe": "One-Click"})   # ... its unsubscribes are not
    assert r.status_code == 200 and "Unsubscribed" in r.get_data(as_text=True)
    assert token not in r.get_data(as_text=True)                          # no link back to any page
    assert r.headers["Referrer-Policy"] == "no-referrer" and r.headers["Cache-Control"] == "no-store"
    assert public.get(_path(forget)).status_code == 200
    assert "Unsubscribed" in public.post(_path(forget)).get_data(as_text=True)
    assert public.post(_path(one_click)).status_code == 404              # once only: the address is gone

    sink.messages.clear()
    import_rows(logged_in, [("Client 1", "Fix", day, "09:00:00", "02:00:00")])                      # 105 %
    assert sink.to("one-click@example.org") == [] and sink.to("early@example.org") == []
    (over,) = sink.to("stays@example.org")
    new_token = re.search(r"https://hours\.example\.com/h/([\w-]+)", over.get_body(("plain",)).get_content()).group(1)
    assert new_token != token and public.get(f"/h/{new_token}").status_code == 200
    assert "Unsubscribed" in public.post(_path(over["List-Unsubscribe"].strip("<>"))).get_data(as_text=True)


def test_subscribe_text_lists_the_alerts_the_retainer_sends(app, logged_in, smtp):
    sink, _ = smtp
    retainer_id, token = small_retainer(app, dt.datetime.now(dt.UTC).date().replace(day=1))
    public = app.test_client()

    def form_text() -> str:
        page = public.get(f"/h/{token}").get_data(as_text=True)
        match = re.search(r'<p class="muted" id="alerts-when">(.*?)</p>', page, re.S)
        return " ".join(unescape(match.group(1)).split()) if match else ""

    assert form_text().startswith(
        "Get an e-mail when 80 % of a period's hours are used, when all of them are used, when more hours are "
        "worked than the period holds, when a period closes (with its statement) and when an incident report "
        "is published.")
    r = post_form(logged_in, f"/retainers/{retainer_id}/alerts", {"alert": ["overage", "period_closed"], "copy": "1"},
                  page=f"/retainers/{retainer_id}")
    assert r.status_code == 302
    assert form_text().startswith("Get an e-mail when more hours are worked than the period holds and when a "
                                  "period closes (with its statement).")     # the cached page was rebuilt
    public.post(f"/h/{token}/alerts", data={"email": "client@example.org"})
    (confirmation,) = sink.to("client@example.org")
    assert ("You would get an e-mail when more hours are worked than the period holds and when a period closes "
            "(with its statement).") in " ".join(confirmation.get_body(("plain",)).get_content().split())
    r = post_form(logged_in, f"/retainers/{retainer_id}/alerts", {"copy": "1"}, page=f"/retainers/{retainer_id}")
    assert r.status_code == 302
    assert form_text() == "" and 'id="alerts"' not in public.get(f"/h/{token}").get_data(as_text=True)
