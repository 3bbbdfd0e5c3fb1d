"""Retainers in money: the page, the JSON, the CSV and the statement agree with hours × rate and the
fee to the smallest coin of each currency, across a rollover and a billed overage."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import subprocess
from decimal import Decimal

import pytest
from babel.numbers import format_currency

from app.db import get_db
from hourtab.core.db import transaction
from hourtab.retainers import credits, service
from tests.factories import make_account
from tests.helpers.money import ENTRIES, HOUR, PRICES, coins, money_retainer, worth


@pytest.fixture(params=list(PRICES))
def priced(request, app, client):
    currency = request.param
    return currency, money_retainer(app, currency)


def test_json_amounts_are_hours_times_rate_and_the_fee_in_the_currencys_minor_unit(client, priced):
    currency, token = priced
    fee, rate, over, topup = PRICES[currency]
    doc = json.loads(client.get(f"/h/{token}.json").data)
    periods = {p["label"]: p for p in doc["periods"]}
    october, november, december = periods["Oct 2026"], periods["Nov 2026"], periods["Dec 2026"]
    fee_amount = coins(Decimal(fee.replace(",", "")), currency)
    for p in (october, november, december):
        assert p["money"]["currency"] == currency
        assert p["money"]["fee"] == str(fee_amount)
        assert p["money"]["used_amount"] == str(worth(p["used_seconds"], rate, currency))
        assert p["money"]["remaining_amount"] == str(worth(max(p["closing_seconds"], 0), rate, currency))
    # October's 8 unused hours rolled into November; November used 33 of 28 h: 5 h billed at the overage rate.
    assert november["opening_seconds"] == 8 * HOUR and november["overage_seconds"] == 5 * HOUR
    assert november["money"]["overage_amount"] == str(worth(5 * HOUR, over, currency))
    assert november["money"]["due_amount"] == str(fee_amount + worth(5 * HOUR, over, currency))
    assert october["money"]["overage_amount"] == str(coins(Decimal(0), currency))
    assert december["money"]["topups_amount"] == str(coins(Decimal(topup), currency))
    assert december["money"]["remaining_amount"] == str(worth(20 * HOUR + 5 * HOUR - 27000, rate, currency))
    assert doc["current"]["money"] == december["money"]
    assert doc["retainer"]["terms"]["money"] == {
        "currency": currency, "fee": str(fee_amount), "hourly_rate": str(coins(Decimal(rate), currency)),
        "overage_rate": str(coins(Decimal(over), currency))}
    assert [c["amount"] for c in doc["credits"]] == [str(coins(Decimal(topup), currency))]
    if currency == "JPY":   # no minor unit: whole yen, no decimal point anywhere
        assert november["money"]["used_amount"] == "792000" and "." not in json.dumps(november["money"])


def test_csv_rows_are_each_entrys_rounded_hours_times_rate(client, priced):
    currency, token = priced
    rate = PRICES[currency][1]
    rows = list(csv.DictReader(io.StringIO(client.get(f"/h/{token}.csv").data.decode("utf-8-sig"))))
    assert len(rows) == len(ENTRIES)
    for row in rows:
        assert row["currency"] == currency
        assert row["amount"] == str(worth(int(row["rounded_seconds"]), rate, currency))
    if currency == "EUR":   # 8 h 20 min 17 s at €150: €1,250.7083… → €1,250.71
        assert rows[2]["amount"] == "1250.71"


def test_page_shows_the_amounts_the_json_has(client, priced):
    currency, token = priced
    html = client.get(f"/h/{token}").get_data(as_text=True)
    doc = json.loads(client.get(f"/h/{token}.json").data)
    current = doc["current"]["money"]
    for key in ("used_amount", "remaining_amount", "fee"):
        assert format_currency(Decimal(current[key]), currency, locale="en") in html, key
    november = {p["label"]: p for p in doc["periods"]}["Nov 2026"]["money"]
    assert format_currency(Decimal(november["due_amount"]), currency, locale="en") in html
    assert format_currency(Decimal(november["overage_amount"]), currency, locale="en") in html
    if currency == "JPY":
        assert "¥180,000" in html   # December: 7.5 h at ¥24,000, whole yen
    # The terms' summary writes the fee and rates as the amounts beside it are written.
    fee, rate, over, _ = PRICES[currency]
    summary = " ".join(re.sub(r"<[^>]+>", "", html).split())
    for amount, per in ((fee, "month"), (rate, "hour")):
        assert f"{format_currency(Decimal(amount.replace(',', '')), currency, locale='en')} per {per}" in summary
    assert f"billed at {format_currency(Decimal(over), currency, locale='en')}/h" in summary


def pdf_text(data: bytes, tmp_path) -> str:
    path = tmp_path / "statement.pdf"
    path.write_bytes(data)
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_statement_shows_the_periods_amounts(client, priced, tmp_path):
    currency, token = priced
    fee, rate, over, _ = PRICES[currency]
    text = pdf_text(client.get(f"/h/{token}/statement/2026-11.pdf").data, tmp_path)
    money = lambda amount: format_currency(amount, currency, locale="en")  # noqa: E731
    assert money(worth(33 * HOUR, rate, currency)) in text               # used
    assert money(worth(5 * HOUR, over, currency)) in text                # overage billed
    assert money(coins(Decimal(fee.replace(",", "")), currency)) in text  # fee
    assert "Amount for the period" in text


def test_a_retainer_sold_in_hours_has_no_money(app, client):
    from tests.helpers.hours import setup_retainer

    with app.app_context():
        _, retainer = setup_retainer(get_db())
        token = retainer.public_token
    doc = json.loads(client.get(f"/h/{token}.json").data)
    assert doc["retainer"]["terms"]["money"] is None and all(p["money"] is None for p in doc["periods"])
    assert 'id="money"' not in client.get(f"/h/{token}").get_data(as_text=True)


@pytest.fixture
def cli_env(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    return database_url


def test_cli_creates_and_edits_a_retainer_in_money_and_refuses_bad_amounts_in_one_line(cli_env):
    from click.testing import CliRunner
    from sqlalchemy.orm import Session

    from app.cli import cli
    from hourtab.core.db import make_engine
    from hourtab.retainers.models import Retainer
    from hourtab.retainers.versions import in_force, terms_versions

    engine = make_engine(cli_env)
    with Session(engine) as db:
        make_account(db, "ada@example.com", "pro")
    runner = CliRunner()
    base = ["retainer", "create", "--account", "ada@example.com", "--name", "R", "--client", "Acme",
            "--hours", "20", "--start", "2026-01-01"]
    for bad, says in ((["--fee", "3000"], "currency"), (["--fee", "3000.5", "--currency", "JPY"], "whole number"),
                      (["--fee", "abc", "--currency", "EUR"], "amount"), (["--rate", "1", "--currency", "XQQ"],
                                                                           "Unknown currency")):
        r = runner.invoke(cli, [*base, *bad])
        assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, r.output
    r = runner.invoke(cli, [*base, "--fee", "3000", "--rate", "150", "--overage-rate", "160", "--currency", "eur",
                            "--json"])
    assert r.exit_code == 0, r.output
    rid = json.loads(r.output)["id"]
    r = runner.invoke(cli, ["retainer", "edit", str(rid), "--fee", "3300", "--effective-from", "2099-01-01"])
    assert r.exit_code == 0 and "Saved" in r.output, r.output
    r = runner.invoke(cli, ["retainer", "edit", str(rid), "--rate", "165.5"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["retainer", "edit", str(rid), "--currency", "JPY"])
    assert r.exit_code == 2 and "whole number" in r.output   # €165.50 has no place in yen
    with Session(engine) as db:
        retainer = db.get(Retainer, rid)
        now = in_force(db, retainer, dt.date.today())
        assert (now.fee, now.currency, now.hourly_rate, now.overage_rate) == (
            Decimal("3000.00"), "EUR", Decimal("165.50"), Decimal("160.00"))
        assert now.overage.value == "bill"
        later = in_force(db, retainer, dt.date(2099, 1, 1))
        # A version scheduled for later keeps its own figures, as for hours.
        assert (later.fee, later.hourly_rate) == (Decimal("3300.00"), Decimal("150.00"))
        first = terms_versions(db, retainer)[0]
        assert (first.fee, first.hourly_rate) == (Decimal("3000"), Decimal("150"))
    engine.dispose()


def test_the_migration_adds_and_drops_the_money_columns_keeping_the_rows(empty_url):
    from alembic import command
    from sqlalchemy import inspect, text

    from app.migrate import alembic_config, upgrade
    from hourtab.core.db import make_engine

    upgrade(empty_url)
    engine = make_engine(empty_url)
    with engine.begin() as c:
        c.execute(text("INSERT INTO accounts (id, email, password_hash, plan, display_name, contact, timezone, "
                       "created_at, password_changed_at) VALUES (1, 'ada@example.com', '!', 'pro', 'Ada', '', "
                       "'UTC', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"))
    engine.dispose()
    command.downgrade(alembic_config(empty_url), "0017e")
    engine = make_engine(empty_url)
    columns = {c["name"] for c in inspect(engine).get_columns("retainers")}
    assert "fee" not in columns and "allotment_s" in columns
    assert "invoices" not in inspect(engine).get_table_names()
    with engine.connect() as c:
        assert c.execute(text("SELECT email FROM accounts")).scalars().all() == ["ada@example.com"]
    engine.dispose()
    upgrade(empty_url)
    engine = make_engine(empty_url)
    assert {"fee", "currency", "hourly_rate"} <= {c["name"] for c in inspect(engine).get_columns("retainer_terms")}
    assert {"amount", "currency"} <= {c["name"] for c in inspect(engine).get_columns("retainer_credits")}
    assert {"invoices", "invoice_profiles", "invoice_clients"} <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_the_api_ledger_of_a_priced_retainer_matches_the_openapi_file(app, client, priced):
    from hourtab.core import apitokens
    from hourtab.retainers.models import Retainer
    from tests.helpers.api_schema import check

    currency, token = priced
    with app.app_context():
        db = get_db()
        retainer = db.query(Retainer).one()
        with transaction(db):
            _, secret = apitokens.create(db, retainer.account_id, "script")
        rid = retainer.id
    body = check(client.get(f"/api/v1/retainers/{rid}/ledger", headers={"Authorization": f"Bearer {secret}"}),
                 "/api/v1/retainers/{retainer_id}/ledger", 200)
    assert body["ledger"]["current"]["money"]["currency"] == currency
    assert body["ledger"]["periods"] == json.loads(client.get(f"/h/{token}.json").data)["periods"]


def test_a_top_up_priced_in_another_currency_than_the_retainer_bills_in_is_refused(app):
    """It would be left out of every amount the period bills; nothing is saved."""
    from hourtab.core.accounts import find_account
    from hourtab.core.errors import InvalidInput

    token = money_retainer(app, "EUR")
    with app.app_context():
        db = get_db()
        account = find_account(db, "ada@example.com")
        retainer = service.by_token(db, token)
        with pytest.raises(InvalidInput, match="bills in EUR"), transaction(db):
            credits.add_credit(db, account, retainer.id, "topup", dt.date(2026, 12, 3), "5", "Block",
                               amount="800", currency="USD")
        assert [c.amount for c in credits.credits_of(db, retainer)] == [Decimal("700.00")]
