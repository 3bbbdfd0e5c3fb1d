"""The client's public hours page and its exports, on both databases, with a real Toggl import."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from app.db import get_db
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.presentation import headline
from tests.helpers.hours import AUG_20, toggl_csv
from tests.helpers.hours import setup_retainer as _setup

XSS = "<script>alert(1)</script>"


@pytest.fixture
def hours_app(app):
    app.config["HOURS_CLOCK"] = lambda: AUG_20
    return app


def setup(app, **kwargs):
    with app.app_context():
        account, retainer = _setup(get_db(), **kwargs)
        return account.id, retainer.id, retainer.public_token


def headline_on(html: str) -> str:
    """The page's headline as a reader sees it (figures kept with their units by markup)."""
    inner = re.search(r'id="headline">(.*?)</p>', html, re.S).group(1)
    return re.sub(r"<[^>]+>", "", inner).replace("&nbsp;", " ")


def ledger_headline(app, retainer_id):
    with app.app_context():
        db = get_db()
        from hourtab.retainers.models import Retainer

        return headline(ledger_reads.retainer_ledger(db, db.get(Retainer, retainer_id), AUG_20).current)


def test_page_headline_matches_ledger_and_is_private(hours_app):
    _, rid, token = setup(hours_app)
    client = hours_app.test_client()
    r = client.get(f"/h/{token}")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    expected = ledger_headline(hours_app, rid)
    assert re.match(r"^[\d.]+ of 160 h used · [\d.]+ h left · resets 1 Sep$", expected)
    assert headline_on(html) == expected
    assert '<meta name="robots" content="noindex">' in html
    assert r.headers["Referrer-Policy"] == "no-referrer"
    assert "script-src" not in r.headers["Content-Security-Policy"]
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "Updated " in html and "Ada Consultant" in html and "<svg" in html


def test_the_charts_legend_shows_each_line_as_the_chart_draws_it(hours_app):
    """The legend is HTML beside the chart: each label's sample has its line's colour, width and
    dashes, in CSS px at the drawing's own size (its points are 0.72 of a px there)."""
    from hourtab.retainers.chart import WIDE

    _, _, token = setup(hours_app)
    html = hours_app.test_client().get(f"/h/{token}").get_data(as_text=True)
    chart = ET.fromstring(re.search(r'<svg viewBox="[^"]*"[^>]*class="burnup".*?</svg>', html, re.S).group(0))
    legend = ET.fromstring(re.search(r'<ul class="burnup-legend".*?</ul>', html, re.S).group(0))
    px = WIDE.width / float(chart.get("viewBox").split()[2])
    drawn = {}
    for path in chart.iter("path"):
        style = dict(part.split(": ") for part in path.get("style").split("; "))
        if style.get("stroke") in ("#2457c5", "#8a94a6", "#1e7d3a"):
            drawn[style["stroke"]] = (float(style["stroke-width"]) * px,
                                      [float(d) * px for d in style.get("stroke-dasharray", "").split(",") if d])
    shown = {}
    for item in legend.iter("li"):
        (sample,) = item.iter("path")
        shown[item.find("svg").tail] = (sample.get("stroke"), float(sample.get("stroke-width")),
                                        [float(d) for d in sample.get("stroke-dasharray", "").split()])
    assert list(shown) == ["hours used", "even pace", "hours available"]
    for colour, width, dashes in shown.values():
        assert drawn[colour][0] == pytest.approx(width)
        assert drawn[colour][1] == pytest.approx(dashes)
    assert len(drawn) == 3


def test_rotate_makes_old_url_404_like_an_unknown_token(hours_app):
    aid, rid, token = setup(hours_app)
    client = hours_app.test_client()
    assert client.get(f"/h/{token}").status_code == 200  # now cached
    with hours_app.app_context():
        db = get_db()
        from hourtab.core.accounts import Account

        with transaction(db):
            new = service.rotate_token(db, db.get(Account, aid), rid).public_token
    old = client.get(f"/h/{token}")
    unknown = client.get("/h/" + "A" * 32)
    assert old.status_code == unknown.status_code == 404
    assert old.get_data() == unknown.get_data()
    assert client.get(f"/h/{token}.json").status_code == 404
    assert client.get(f"/h/{new}").status_code == 200
    assert len(new) >= 22 and new != token  # 192 bits, URL-safe base64


def test_disabled_token_is_404(hours_app):
    aid, rid, token = setup(hours_app)
    with hours_app.app_context():
        db = get_db()
        from hourtab.core.accounts import Account

        with transaction(db):
            service.disable_token(db, db.get(Account, aid), rid)
    assert hours_app.test_client().get(f"/h/{token}").status_code == 404


def test_misses_are_rate_limited_per_address_hits_are_not(hours_app):
    hours_app.config["PUBLIC_MISS_LIMIT"] = 3
    _, _, token = setup(hours_app)
    client = hours_app.test_client()
    for i in range(3):
        assert client.get(f"/h/nope{i:028d}").status_code == 404
    r = client.get("/h/" + "B" * 32)
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    assert client.get(f"/h/{token}").status_code == 200
    other = client.get("/h/" + "C" * 32, environ_base={"REMOTE_ADDR": "10.9.8.7"})
    assert other.status_code == 404


def test_page_changes_right_after_an_import(hours_app):
    aid, rid, token = setup(hours_app)
    client = hours_app.test_client()
    before = client.get(f"/h/{token}").get_data(as_text=True)
    assert "Late night data pipeline fix" not in before
    with hours_app.app_context():
        db = get_db()
        from hourtab.core.accounts import Account

        with transaction(db):  # the importer's own service: nothing of ours is called
            import_file(db, db.get(Account, aid),
                        toggl_csv([("Client 1", "Late night data pipeline fix", "2017-08-19", "21:00:00",
                                    "02:30:00")]), "more.csv")
    after = client.get(f"/h/{token}").get_data(as_text=True)
    assert "Late night data pipeline fix" in after
    assert headline_on(after) == ledger_headline(hours_app, rid) != headline_on(before)


def test_xss_description_is_escaped_everywhere(hours_app, tmp_path):
    data = toggl_csv([("Client 1", XSS, "2017-08-18", "10:00:00", "01:00:00"),
                      ("Client 1", '=HYPERLINK("http://evil.example","x")', "2017-08-18", "12:00:00", "00:30:00"),
                      ("Client 1", "+cmd|' /C calc'!A0", "2017-08-18", "13:00:00", "00:30:00")])
    _, _, token = setup(hours_app, data=data, hours="20")
    client = hours_app.test_client()
    html = client.get(f"/h/{token}").get_data(as_text=True)
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html.lower()

    rows = list(csv.reader(io.StringIO(client.get(f"/h/{token}.csv").get_data(as_text=True).lstrip("\ufeff"))))
    descriptions = [row[5] for row in rows[1:]]
    assert XSS in descriptions
    assert "'=HYPERLINK(\"http://evil.example\",\"x\")" in descriptions
    assert "'+cmd|' /C calc'!A0" in descriptions
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows[1:] for cell in row)

    r = client.get(f"/h/{token}/statement/2017-08.pdf")
    assert r.status_code == 200 and r.mimetype == "application/pdf"
    pdf = tmp_path / "statement.pdf"
    pdf.write_bytes(r.data)
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert XSS in text  # shown as text, literally: escaped, not interpreted
    assert "Page 1 of" in text
    subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", str(pdf), str(tmp_path / "page")],
                   check=True)
    assert (tmp_path / "page-1.png").stat().st_size > 5000


def test_json_export_schema(hours_app):
    _, rid, token = setup(hours_app)
    r = hours_app.test_client().get(f"/h/{token}.json")
    assert r.status_code == 200 and r.mimetype == "application/json"
    doc = r.get_json()
    assert doc["schema"] == "hourtab.hours/1"
    assert doc["current"]["headline"] == ledger_headline(hours_app, rid)
    aug = doc["periods"][0]
    assert aug["start"] == "2017-08-01" and aug["last_day"] == "2017-08-31" and aug["open"] is True
    assert aug["allotment_seconds"] == 160 * 3600 and aug["allotment_hours"] == "160"
    assert aug["closing_seconds"] == aug["available_seconds"] - aug["used_seconds"]
    assert doc["retainer"]["terms"]["period"] == "monthly"
    assert doc["current"]["forecast"]["kind"] in {"on_pace", "run_out", "ran_out"}


def test_csv_lists_every_counted_entry(hours_app):
    _, rid, token = setup(hours_app)
    body = hours_app.test_client().get(f"/h/{token}.csv").get_data(as_text=True).lstrip("\ufeff")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == 168  # the sample's "Client 1" rows
    with hours_app.app_context():
        from hourtab.retainers.models import Retainer

        db = get_db()
        ledger = ledger_reads.retainer_ledger(db, db.get(Retainer, rid), AUG_20)
    assert sum(int(r["rounded_seconds"]) for r in rows) == sum(p.used_s for p in ledger.periods)


def test_statement_and_feed(hours_app):
    _, _, token = setup(hours_app)
    client = hours_app.test_client()
    assert client.get(f"/h/{token}/statement/2017-13.pdf").status_code == 400
    assert client.get(f"/h/{token}/statement/2016-01.pdf").status_code == 404
    assert client.get("/h/" + "D" * 32 + "/statement/2017-08.pdf").status_code == 404
    feed = client.get(f"/h/{token}/feed.atom")
    assert feed.status_code == 200 and feed.mimetype == "application/atom+xml"
    root = ET.fromstring(feed.data)
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.findtext("a:title", namespaces=ns) for e in root.findall("a:entry", ns)]
    assert any(t.startswith("Import: 168 entries") for t in titles)


def test_confirmed_removal_shows_at_once(hours_app):
    """A re-import without an entry flags it; confirming the removal drops it from the page."""
    from hourtab.imports.importer import confirm_removal

    rows = [("Client 1", "kept session", "2017-08-10", "09:00:00", "01:00:00"),
            ("Client 1", "session deleted upstream", "2017-08-11", "09:00:00", "02:00:00")]
    aid, rid, token = setup(hours_app, data=toggl_csv(rows), hours="20")
    client = hours_app.test_client()
    assert "session deleted upstream" in client.get(f"/h/{token}").get_data(as_text=True)
    with hours_app.app_context():
        db = get_db()
        from hourtab.core.accounts import Account

        account = db.get(Account, aid)
        with transaction(db):
            # The new file spans 10–12 Aug, so the importer looks for (and flags) the 11 Aug entry.
            import_file(db, account, toggl_csv([rows[0], ("Client 1", "next day", "2017-08-12", "09:00:00",
                                                          "00:30:00")]), "again.csv")
        with transaction(db):
            confirm_removal(db, account)
    page = client.get(f"/h/{token}").get_data(as_text=True)
    assert "session deleted upstream" not in page and "kept session" in page
    assert headline_on(page) == ledger_headline(hours_app, rid)
