"""What the client reads (issue 19 item 7), on both databases, from real imports through the importer:
who did the work in a team's export (page and CSV), and previous periods that add up on their face.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import subprocess
from html import unescape

import pytest

from app.db import get_db
from hourtab.core.db import transaction
from hourtab.retainers import credits
from tests.helpers.hours import PEOPLE, setup_retainer, team_export, toggl_csv

OCT_20 = dt.datetime(2017, 10, 20, 12, tzinfo=dt.UTC)     # August and September closed


@pytest.fixture
def hours_app(app):
    app.config["HOURS_CLOCK"] = lambda: OCT_20
    return app


def _setup(app, data: bytes, top_ups=(), **terms) -> str:
    with app.app_context():
        db = get_db()
        account, retainer = setup_retainer(db, data=data, hours=terms.pop("hours", "30"), **terms)
        for on, hours, reason in top_ups:
            with transaction(db):
                credits.add_credit(db, account, retainer.id, "topup", on, hours, reason)
        return retainer.public_token


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _table(html: str, table_id: str) -> tuple[list[str], list[list[str]]]:
    """Header cells and body rows of the table, as text."""
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', html, re.S).group(1)
    head = [_text(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", table.split("</thead>")[0], re.S)]
    body = table.split("</thead>")[1]
    rows = [[_text(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]
    return head, rows


def test_a_team_export_names_who_did_each_entry_on_the_page_the_csv_and_the_statement(hours_app, tmp_path):
    token = _setup(hours_app, team_export())
    client = hours_app.test_client()
    html = client.get(f"/h/{token}").get_data(as_text=True)
    head, rows = _table(html, "sessions")
    assert head == ["Date", "Description", "Person", "Time", "Counted"]
    entries = [r for r in rows if len(r) == 5]
    assert entries and {r[2] for r in entries} == set(PEOPLE)
    # The export's own rows for Client 1 in October, by start time: who did each one.
    export = list(csv.DictReader(io.StringIO(team_export().decode())))
    october = {(r["Start time"][:5], r["Description"]): r["User"] for r in export
               if r["Client"] == "Client 1" and r["Start date"].startswith("2017-10")}
    assert {(r[0], r[1].split(" · ")[0]): r[2] for r in entries} == october

    body = client.get(f"/h/{token}.csv").get_data(as_text=True).lstrip("\ufeff")
    got = list(csv.DictReader(io.StringIO(body)))
    # Added after the older columns (and before the money ones, added later): columns read by position stay put.
    assert list(got[0])[9:11] == ["rounded_seconds", "person"]
    mine = [r for r in export if r["Client"] == "Client 1"]
    assert len(got) == len(mine)
    assert sorted((r["date"], r["start"], r["person"]) for r in got) == sorted(
        (r["Start date"], r["Start time"][:5], r["User"]) for r in mine)

    # The statement lists who did each entry too, as the CSV does.
    pdf = tmp_path / "statement.pdf"
    pdf.write_bytes(client.get(f"/h/{token}/statement/2017-10.pdf").data)
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"Date\s+Start\s+Project\s+Description\s+Person\s+Time", text)
    october = sorted((r["date"], r["start"], r["person"]) for r in got if r["date"].startswith("2017-10"))
    listed = sorted((m.group(1), m.group(2), next(p for p in PEOPLE if p.split()[0] in m.group(0)))
                    for m in re.finditer(r"^\s*(2017-10-\d\d)\s+(\d\d:\d\d)\s.*$", text, re.M))
    assert listed == october and len(listed) > 3


def test_one_persons_export_has_no_person_column_and_the_csv_still_names_them(hours_app):
    token = _setup(hours_app, toggl_csv([("Client 1", "Profiling", "2017-10-02", "09:00:00", "01:00:00"),
                                         ("Client 1", "Fix", "2017-10-03", "09:00:00", "00:30:00")]))
    client = hours_app.test_client()
    head, _ = _table(client.get(f"/h/{token}").get_data(as_text=True), "sessions")
    assert head == ["Date", "Description", "Time", "Counted"]
    rows = list(csv.DictReader(io.StringIO(client.get(f"/h/{token}.csv").get_data(as_text=True).lstrip("\ufeff"))))
    assert [r["person"] for r in rows] == ["Ada", "Ada"]


def _number(cell: str) -> float:
    return float(cell.split()[0])


def test_previous_periods_add_up_carried_in_plus_allotment_less_used_is_closing(hours_app):
    # 30 h a month, unused hours roll over, more is worked than that: September starts in debt.
    token = _setup(hours_app, team_export(), rollover="all", top_ups=[("2017-09-04", "5", "Prepaid block")])
    client = hours_app.test_client()
    html = client.get(f"/h/{token}").get_data(as_text=True)
    head, rows = _table(html, "periods")
    assert head == ["Period", "Carried in", "Allot\u00adment", "Used", "Closing", "State\u00adment"]
    assert [r[0] for r in rows] == ["Sep 2017", "Aug 2017"]
    doc = client.get(f"/h/{token}.json").get_json()
    by_label = {p["label"]: p for p in doc["periods"]}
    for label, carried, allotment, used, closing, statement in rows:
        p = by_label[label]
        added = float(p["topups_hours"]) + float(p["adjustments_hours"])
        assert _number(carried) == float(p["opening_hours"]) and _number(used) == float(p["used_hours"])
        assert _number(allotment) == float(p["allotment_hours"]) == 30
        assert ("+5 added" in allotment) == (added == 5)
        assert _number(closing) == float(p["closing_hours"])
        assert round(_number(carried) + _number(allotment) + added - _number(used), 2) == _number(closing)
        assert statement == "PDF statement of " + label
    sep, aug = rows
    assert _number(sep[1]) == _number(aug[4]) < 0            # debt carried in, as August closed
    assert "A negative figure is hours worked beyond what was available" in _text(html)
    assert "Available" not in _table(html, "periods")[0]
    for month in ("2017-08", "2017-09"):
        pdf = client.get(f"/h/{token}/statement/{month}.pdf")
        assert pdf.status_code == 200 and pdf.data.startswith(b"%PDF")


def test_hours_that_lapse_at_the_reset_are_shown_where_they_go(hours_app):
    rows = [("Client 1", "Small job", "2017-08-02", "09:00:00", "02:00:00"),
            ("Client 1", "Another", "2017-09-05", "09:00:00", "01:00:00")]
    token = _setup(hours_app, toggl_csv(rows), hours="10", rollover="none")
    html = hours_app.test_client().get(f"/h/{token}").get_data(as_text=True)
    _, (sep, aug) = _table(html, "periods")
    assert aug[1:5] == ["0", "10", "2", "8 8 lapsed"]         # closing 8, of which 8 lapse at the reset
    assert sep[1] == "0" and sep[4].startswith("9 9 lapsed")
    assert "hours that lapsed or were billed at the reset are not carried on" in _text(html)
