"""Holes from the security pass around alert e-mail (issue 22 item 6), each tried as the attack was:

* a display name saved at /account/settings with control characters (sign-up already removed
  them) broke the Atom feed and reached the ``From:`` line of e-mails;
* Unicode spellings of one address got past the per-address subscribe limit;
* ``List-Unsubscribe`` went out RFC 2047-encoded, so mail clients offered no one-click unsubscribe.

A real SMTP server (aiosmtpd) receives the mail; every test runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from sqlalchemy import create_engine, select, text

from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.forms import post_form, signup
from tests.helpers.mail import header_line, mailing

PUBLIC_URL = "https://stunden.bücher.example"      # an internationalised host name
#: Control characters, a line break and a right-to-left override in one name.
HOSTILE_NAME = "Ada\x01\x02\ufffe\uffff\x0b\x1f\r\nLove\x1b\x7flace\u202e\x85"
#: Places in a message where a control byte must never be (CR, LF and tab are the message's own).
CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@pytest.fixture
def app(make_app, smtp):
    return make_app(**mailing(smtp[1], PUBLIC_URL))


def _token(app) -> str:
    with app.app_context():
        from app.db import get_db
        from hourtab.retainers.models import Retainer

        return get_db().scalar(select(Retainer.public_token))


def _from(i: int) -> dict:
    """A different client address per request (a documentation range), so only the per-address limit holds."""
    return {"environ_base": {"REMOTE_ADDR": f"192.0.2.{i}"}}


def test_display_name_from_settings_is_one_line_in_the_feed_and_in_mail(app, client, smtp):
    sink, _ = smtp
    assert signup(client).status_code == 302
    r = post_form(client, "/account/settings", {"display_name": HOSTILE_NAME, "contact": "hours@ada.example",
                                                "timezone": "UTC", "rounding_min": "0", "hours_unit": "decimal"})
    assert r.status_code == 302
    with app.app_context():
        from app.db import get_db
        from hourtab.core.accounts import Account

        assert get_db().scalar(select(Account.display_name)) == "Ada Lovelace"
    assert post_form(client, "/retainers/new", FORM).status_code == 302
    token = _token(app)
    public = app.test_client()
    feed = public.get(f"/h/{token}/feed.atom")
    assert feed.status_code == 200
    assert "Ada Lovelace" in "".join(ET.fromstring(feed.data).itertext())   # well-formed XML

    assert public.post(f"/h/{token}/alerts", data={"email": "client@example.org"}).status_code == 200
    (confirmation,) = sink.to("client@example.org")
    assert confirmation["From"] == "Ada Lovelace via HourTab <alerts@hours.example.com>"
    head = confirmation.raw_bytes.split(b"\r\n\r\n", 1)[0]
    assert CONTROL_BYTES.search(confirmation.raw_bytes) is None, head
    assert header_line(confirmation.raw_bytes, "From") == b"Ada Lovelace via HourTab <alerts@hours.example.com>"


def _spellings(local: str, domain: str) -> list[str]:
    """17 spellings of one inbox: one letter at a time full-width, capitals, an ideographic full stop."""
    def wide(c: str) -> str:
        return chr(ord(c) + 0xFEE0) if c.isascii() and c.isalpha() else c

    out = [local + "@" + domain[:i] + wide(domain[i]) + domain[i + 1:] for i in range(len(domain)) if domain[i] != "."]
    out += [local[:i] + wide(local[i]) + local[i + 1:] + "@" + domain for i in range(len(local))]
    out += [f"{local}@{domain.replace('.', chr(0x3002))}", f"{local.upper()}@{domain.upper()}"]
    return out[:17]


def test_subscribe_limit_counts_unicode_spellings_of_a_domain_as_one_address(app, logged_in, smtp):
    from app.public.alerts import SUBSCRIBE_LIMIT

    sink, _ = smtp
    assert post_form(logged_in, "/retainers/new", FORM).status_code == 302
    token = _token(app)
    spellings = _spellings("client", "example.org")
    assert len(set(spellings)) == 17
    public = app.test_client()
    codes = [public.post(f"/h/{token}/alerts", data={"email": s}, **_from(i)).status_code
             for i, s in enumerate(spellings)]
    assert codes == [200] * SUBSCRIBE_LIMIT + [429] * (17 - SUBSCRIBE_LIMIT)
    assert len(sink.messages) == SUBSCRIBE_LIMIT                         # not 17 mails to one inbox
    assert {tuple(rcpt) for rcpt, _ in sink.messages} == {("client@example.org",)}
    with app.app_context():
        from app.db import get_db
        from hourtab.alerts.models import AlertSubscription

        assert get_db().scalars(select(AlertSubscription.email)).all() == ["client@example.org"]


def test_list_unsubscribe_is_plain_ascii_even_for_an_internationalised_host(app, logged_in, smtp):
    sink, _ = smtp
    assert post_form(logged_in, "/retainers/new", FORM).status_code == 302
    token = _token(app)
    assert app.test_client().post(f"/h/{token}/alerts", data={"email": "client@example.org"}).status_code == 200
    (confirmation,) = sink.to("client@example.org")
    value = header_line(confirmation.raw_bytes, "List-Unsubscribe")
    assert re.fullmatch(rb"<https://stunden\.xn--bcher-kva\.example/alerts/unsubscribe/[\w-]{43}>", value), value
    assert header_line(confirmation.raw_bytes, "List-Unsubscribe-Post") == b"List-Unsubscribe=One-Click"
    # The link in the header is the one that works.
    path = value.decode()[1:-1].split(".example", 1)[1]
    assert "Unsubscribed" in app.test_client().post(path, data={"List-Unsubscribe": "One-Click"}).get_data(
        as_text=True)


def test_names_and_addresses_saved_before_the_fix_are_cleaned_by_the_migration(database_url, tmp_path):
    """Migration 0015 repairs display names stored with control characters, and rewrites subscription
    addresses into the one spelling, keeping one row per inbox (the confirmed one)."""
    from app.migrate import upgrade

    if database_url.startswith("sqlite"):
        url, admin = f"sqlite:///{tmp_path / 'before.db'}", None
    else:                                   # an empty database beside the test's own
        url = database_url + "_m"
        admin = create_engine(database_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{url.rsplit("/", 1)[1]}"'))
    now = "2026-01-01 00:00:00"
    account = ("INSERT INTO accounts (id, email, password_hash, plan, display_name, contact, timezone, rounding_min, "
               "hours_unit, created_at, password_changed_at) VALUES (:id, :email, '!', 'free', :name, '', 'UTC', 0, "
               "'decimal', :now, :now)")
    sub = ("INSERT INTO alert_subscriptions (id, retainer_id, email, token, confirmed_at, created_at) "
           "VALUES (:id, 1, :email, :token, :confirmed, :now)")
    try:
        upgrade(url, "0010")
        engine = create_engine(url)
        with engine.begin() as c:
            # What PostgreSQL can store of the hostile name (it refuses NUL; the rest went in as typed).
            c.execute(text(account), {"id": 1, "email": "a@example.com", "now": now,
                                      "name": HOSTILE_NAME.replace("\ufffe", "").replace("\uffff", "")})
            c.execute(text(account), {"id": 2, "email": "b@example.com", "name": "Grace Hopper", "now": now})
            c.execute(text("INSERT INTO retainers (id, account_id, name, client, allotment_s, period, reset_day, "
                           "start_date, timezone, rollover, overage, rounding_min, rounding_mode, minimum_min, "
                           "match_rules, active, revision, created_at, updated_at) VALUES (1, 1, 'R', 'C', 3600, "
                           "'monthly', 1, '2026-01-01', 'UTC', 'none', 'carry', 0, 'up', 0, '{}', :yes, 1, :now, "
                           ":now)"), {"now": now, "yes": True})
            for i, (email, confirmed) in enumerate([("Client@ＥＸＡＭＰＬＥ.org", None), ("client@example.org", now),
                                                    ("CLIENT@example.org", None), ("Other@Example.org", None)]):
                c.execute(text(sub), {"id": i + 1, "email": email, "token": f"t{i}", "confirmed": confirmed,
                                      "now": now})
        upgrade(url, "0015")
        with engine.connect() as c:
            names = c.execute(text("SELECT display_name FROM accounts ORDER BY id")).scalars().all()
            subs = c.execute(text("SELECT id, email FROM alert_subscriptions ORDER BY id")).all()
        engine.dispose()
        assert names == ["Ada Lovelace", "Grace Hopper"]
        assert [tuple(r) for r in subs] == [(2, "client@example.org"), (4, "other@example.org")]
    finally:
        if admin is not None:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)'))
            admin.dispose()
