"""Issue 19 through the real pages and the CLI: where an upload's hours go, and what each client sees.

A multi-client export imported "for" one client's retainer (web preview, ``hourtab import
--retainer``): that retainer counts exactly its client's rows; the other clients' rows count
against their own retainers or none; and the client's page, CSV, JSON and statements carry no other
client's project, description or name. Expectations come from reading the files with ``csv``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from hourtab.core.db import transaction
from hourtab.retainers import service
from tests.helpers.consultant_forms import make_retainers, upload_for_preview
from tests.helpers.documents import html_words, pdf_words
from tests.helpers.forms import post_form
from tests.helpers.multi_client import CLOCKIFY, TOGGL, by_client, foreign_words


def _leaks(words: set[str], text: str) -> list[str]:
    """The words that occur in ``text`` as words (``Project D`` is not in ``Project Description``)."""
    return sorted(w for w in words if re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text))


def _row(html: str, retainer_id: int) -> str:
    found = re.search(rf'<tr data-retainer="{retainer_id}">(.*?)</tr>', html, re.S)
    assert found, f"no routing row for retainer {retainer_id}"
    return html_words(found.group(1))


def _client_surfaces(client, token: str, months: list[str], tmp_path) -> dict[str, str]:
    """Everything the client can read: the page, the JSON, the CSV and each month's statement."""
    out = {"page": html_words(client.get(f"/h/{token}").get_data(as_text=True)),
           "json": json.dumps(json.loads(client.get(f"/h/{token}.json").data), ensure_ascii=False),
           "csv": client.get(f"/h/{token}.csv").get_data(as_text=True)}
    for month in months:
        r = client.get(f"/h/{token}/statement/{month}.pdf")
        assert r.status_code == 200, month
        out[month] = pdf_words(r.data, tmp_path, f"{token}-{month}.pdf")
    return out


def test_web_preview_for_one_retainer_shows_where_the_hours_go_and_the_client_sees_only_its_own(
        app, logged_in, tmp_path):
    rows = by_client(CLOCKIFY)
    ids = make_retainers(app, [("Baykar Teknoloji", "UTC"), ("Zenvo Automotive", "UTC")])
    (baykar, baykar_token), (zenvo, zenvo_token) = ids["Baykar Teknoloji"], ids["Zenvo Automotive"]
    preview, upload_id = upload_for_preview(logged_in, CLOCKIFY.read_bytes(), CLOCKIFY.name, retainer=str(baykar))
    html = logged_in.get(preview).get_data(as_text=True)
    # The choice is kept on the upload, not carried in the preview's address.
    assert "?" not in preview and f'<option value="{baykar}" selected>' in html
    b, z = _row(html, baykar), _row(html, zenvo)
    # Hours of January to March: today's balance is untouched, and nothing the client saw is revised.
    assert b.startswith("Baykar Teknoloji retainer") and " 20 " in f" {b} " and b.endswith("40 h → 40 h none")
    assert z.startswith("Zenvo Automotive retainer") and " 21 " in f" {z} "
    unassigned = html_words(re.search(r'id="routing-unassigned".*?</table>', html, re.S).group(0))
    assert "Matching no retainer: 1 entry" in unassigned and "BMC Power Ön Çalışmalar" in unassigned
    r = post_form(logged_in, f"/imports/{upload_id}/confirm", {"retainer": str(baykar)}, page=preview)
    assert r.status_code == 302
    detail = logged_in.get(f"/imports/{upload_id}").get_data(as_text=True)
    assert "Where these hours went" in detail and " 20 " in f" {_row(detail, baykar)} "
    assert " 21 " in f" {_row(detail, zenvo)} "

    public = app.test_client()
    months = ["2026-01", "2026-02", "2026-03"]
    mine = _client_surfaces(public, baykar_token, months, tmp_path)
    leaks = foreign_words(CLOCKIFY, {"Baykar Teknoloji"}) | {"Zenvo", "BMC Power"}
    assert leaks >= {"STEP & PDF Converter", "Ön Çalışmalar", "Zenvo"}
    for surface, text in mine.items():
        assert _leaks(leaks, text) == [], surface
    counted = list(csv.DictReader(io.StringIO(mine["csv"].lstrip("\ufeff"))))
    assert len(counted) == rows["Baykar Teknoloji"].count
    assert {r["project"] for r in counted} == rows["Baykar Teknoloji"].projects
    assert sum(int(r["duration_seconds"]) for r in counted) == rows["Baykar Teknoloji"].seconds
    theirs = _client_surfaces(public, zenvo_token, [], tmp_path)
    assert {r["project"] for r in csv.DictReader(io.StringIO(theirs["csv"].lstrip("\ufeff")))} == \
        rows["Zenvo Automotive"].projects


def test_cli_import_for_a_retainer_keeps_its_json_and_counts_only_that_client(app, database_url, tmp_path,
                                                                              monkeypatch):
    from app.cli import cli
    from app.db import get_db
    from tests.factories import make_account

    rows = by_client(TOGGL)
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    with app.app_context():
        make_account(get_db(), "cli@example.com", "pro")
    runner = CliRunner()

    def retainer(client: str) -> dict:
        r = runner.invoke(cli, ["retainer", "create", "--account", "cli@example.com", "--name", f"{client} hours",
                                "--client", client, "--hours", "40", "--start", "2017-08-01", "--json"])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    second = retainer("Client 2")
    r = runner.invoke(cli, ["import", str(TOGGL), "--account", "cli@example.com", "--retainer", str(second["id"]),
                            "--dry-run"])
    assert r.exit_code == 0, r.output
    assert re.search(rf"retainer {second['id']} Client 2 hours: {rows['Client 2'].count} entries", r.output)
    assert f"matching no retainer: {rows['Client 1'].count} entries" in r.output
    r = runner.invoke(cli, ["import", str(TOGGL), "--account", "cli@example.com", "--retainer", str(second["id"]),
                            "--json"])
    out = json.loads(r.stdout)
    assert {"upload_id", "dry_run", "format", "entries", "total_seconds", "new", "unchanged", "changed", "missing",
            "skipped", "warnings"} <= set(out)
    assert (out["new"], out["entries"]) == (217, 217)
    (routed,) = out["routing"]["retainers"]
    assert (routed["id"], routed["entries"], routed["seconds"]) == (second["id"], rows["Client 2"].count,
                                                                     rows["Client 2"].seconds)
    assert out["routing"]["unassigned"]["entries"] == rows["Client 1"].count
    first = retainer("Client 1")  # made afterwards: the first client's rows go there at once
    with app.app_context():
        db = get_db()
        for made, client in ((first, "Client 1"), (second, "Client 2")):
            frame = service.entries_frame(db, made["id"])
            assert (len(frame), int(frame["duration_s"].sum())) == (rows[client].count, rows[client].seconds)
    public = app.test_client()
    surfaces = _client_surfaces(public, second["public_url"].rsplit("/", 1)[-1], ["2017-08"], tmp_path)
    leaks = foreign_words(TOGGL, {"Client 2"}) | {"Client 1"}
    assert {"Project A", "Project B"} <= leaks
    for surface, text in surfaces.items():
        assert _leaks(leaks, text) == [], surface


def test_the_client_sees_the_exporters_clock_on_its_own_retainers_clock(app, logged_in, tmp_path):
    """The account (the exporter) is in Istanbul; Zenvo's retainer is in New York. The file is read on
    Istanbul's clock, and the client's page and CSV show each session on New York's, 7 h earlier in March."""
    from app.db import get_db
    from hourtab.core.accounts import find_account

    with app.app_context():
        db = get_db()
        with transaction(db):
            find_account(db, "consultant@example.com").timezone = "Europe/Istanbul"
    ids = make_retainers(app, [("Zenvo Automotive", "America/New_York")])
    rid, token = ids["Zenvo Automotive"]
    preview, upload_id = upload_for_preview(logged_in, CLOCKIFY.read_bytes(), CLOCKIFY.name)
    html = logged_in.get(preview).get_data(as_text=True)
    zones = html_words(re.search(r'id="timezone-line".*?</p>', html, re.S).group(0))
    assert "read as Europe/Istanbul time (your account's time zone)" in zones
    assert "Read in more than one time zone" not in html
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=preview)
    istanbul, new_york = ZoneInfo("Europe/Istanbul"), ZoneInfo("America/New_York")
    starts = [dt.datetime.strptime(f"{d} {t}", "%d/%m/%Y %H:%M").replace(tzinfo=istanbul)
              for d, t in by_client(CLOCKIFY)["Zenvo Automotive"].starts]
    export = sorted(f"{s.astimezone(new_york):%Y-%m-%d %H:%M}" for s in starts)
    public = app.test_client()
    counted = list(csv.DictReader(io.StringIO(public.get(f"/h/{token}.csv").get_data(as_text=True).lstrip("\ufeff"))))
    assert sorted(f"{r['date']} {r['start']}" for r in counted) == export
    # The page lists the current period's sessions: March 2026, seen on its last export day.
    app.config["HOURS_CLOCK"] = lambda: dt.datetime(2026, 3, 9, 23, 0, tzinfo=dt.UTC)
    page = public.get(f"/h/{token}").get_data(as_text=True)
    march = [t[-5:] for t in export if t.startswith("2026-03")]
    shown = re.findall(r'<tr><td class="muted">(\d\d:\d\d)</td>', page)
    assert sorted(shown) == sorted(march) and march


@pytest.fixture
def over(app, logged_in):
    """A 10 h retainer of this month with 11 h imported through the pages."""
    today = dt.datetime.now(dt.UTC).date()
    ids = make_retainers(app, [("Client 1", "UTC")], start=today.replace(day=1).isoformat(), hours="10")
    day = today.replace(day=1).isoformat()
    data = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,"
            f"Tags,Amount ()\nAda,ada@example.com,Client 1,P,,Long day,Yes,{day},08:00:00,{day},19:00:00,11:00:00,,\n")
    preview, upload_id = upload_for_preview(logged_in, data.encode(), "over.csv")
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=preview)
    first = today.replace(day=1)
    reset = (first + dt.timedelta(days=32)).replace(day=1)
    return ids["Client 1"], f"11 of 10 h · 1 h over · resets {reset.day} {reset:%b}"


def test_over_the_allotment_the_headline_keeps_the_reset_date_everywhere(app, logged_in, over):
    (rid, token), wanted = over
    public = app.test_client()
    page = public.get(f"/h/{token}").get_data(as_text=True)
    assert wanted in html_words(re.search(r'id="headline".*?</p>', page, re.S).group(0))
    assert json.loads(public.get(f"/h/{token}.json").data)["current"]["headline"] == wanted
    assert wanted in html_words(logged_in.get("/dashboard").get_data(as_text=True))
    assert wanted in html_words(logged_in.get(f"/retainers/{rid}").get_data(as_text=True))
