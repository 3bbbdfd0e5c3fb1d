"""The consultant's ledger counts an import the moment it commits, with no public page view between."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from app.cli import cli
from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.consultant_forms import upload
from tests.helpers.forms import post_form
from tests.helpers.hours import SAMPLE, toggl_csv

EXTRA = [("Client 1", "Late fix", "2017-08-30", "21:00:00", "02:30:00"),
         ("Client 1", "Follow-up", "2017-08-31", "09:00:00", "00:45:00")]


def _august(runner: CliRunner, retainer_id: int) -> dict:
    r = runner.invoke(cli, ["ledger", str(retainer_id), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["periods"][0]


def test_cli_import_then_ledger_counts_new_entries(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "cli"))
    runner = CliRunner()
    assert runner.invoke(cli, ["user", "create", "cli@example.com", "--password-stdin"],
                         input="correct horse battery\n").exit_code == 0
    r = runner.invoke(cli, ["retainer", "create", "--account", "cli@example.com", "--name", "R", "--client",
                            "Client 1", "--hours", "160", "--start", "2017-08-01", "--timezone", "UTC", "--json"])
    assert r.exit_code == 0, r.output
    rid = json.loads(r.output)["id"]
    assert _august(runner, rid)["entries"] == 0

    r = runner.invoke(cli, ["import", str(SAMPLE), "--account", "cli@example.com"])
    assert r.exit_code == 0, r.output
    first = _august(runner, rid)
    assert first["entries"] == 168

    extra = tmp_path / "extra.csv"
    extra.write_bytes(toggl_csv(EXTRA))
    refused = runner.invoke(cli, ["import", str(extra), "--account", "cli@example.com"])
    assert refused.exit_code == 2 and "run it again with --yes" in refused.stderr   # August 2017 is closed
    assert "Aug 2017 (closed)" in refused.stdout and _august(runner, rid)["entries"] == 168
    assert runner.invoke(cli, ["import", str(extra), "--account", "cli@example.com", "--yes"]).exit_code == 0
    second = _august(runner, rid)
    assert second["entries"] == 170
    assert second["used_seconds"] == first["used_seconds"] + 2 * 3600 + 30 * 60 + 45 * 60


def _ledger_entries(app, retainer_id: int) -> int:
    with app.app_context():
        from app.db import get_db
        from hourtab.retainers import ledger_reads
        from hourtab.retainers.models import Retainer

        db = get_db()
        return len(ledger_reads.retainer_ledger(db, db.get(Retainer, retainer_id)).entries)


def _web_import(client, data: bytes, name: str) -> None:
    r = upload(client, data, name)
    assert r.status_code == 302, r.get_data(as_text=True)
    upload_id = int(re.search(r"/imports/(\d+)/preview", r.headers["Location"]).group(1))
    # The second import revises August 2017 (closed): its preview's box confirms that.
    r = post_form(client, f"/imports/{upload_id}/confirm", {"confirm_change": "yes"}, page=r.headers["Location"])
    assert r.status_code == 302


def test_web_import_then_dashboard_and_ledger_count_new_entries(app, logged_in):
    location = post_form(logged_in, "/retainers/new", FORM).headers["Location"]
    rid = int(location.rsplit("/", 1)[1])
    assert _ledger_entries(app, rid) == 0
    _web_import(logged_in, SAMPLE.read_bytes(), "export.csv")
    assert _ledger_entries(app, rid) == 168
    detail = logged_in.get(location).get_data(as_text=True)
    assert "<h2>Entries (168" in detail and "49 entries (" in detail and 'id="inbox-link"' in detail
    _web_import(logged_in, toggl_csv(EXTRA), "extra.csv")
    assert _ledger_entries(app, rid) == 170
    assert "<h2>Entries (170" in logged_in.get(location).get_data(as_text=True)
