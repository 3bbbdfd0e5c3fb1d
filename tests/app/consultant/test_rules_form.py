"""Issue 28 through the consultant's pages and the CLI, on a real Toggl export of "Last, First" clients.

The edit form is posted back exactly as a browser sends it (every field as the page fills it), with
only the hours changed: no entry is lost. Rule names are one input each, so two comma-named clients
go on one retainer. A rule edit that revises closed periods answers with its preview and saves
nothing until it is confirmed; ``hourtab retainer edit`` prints that preview and exits 2 without
``--yes``. The inbox lists unassigned work, and its action goes through the same preview.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from app.cli import cli
from app.db import get_db
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.models import PeriodRevision, Retainer
from hourtab.retainers.revisions import closed
from tests.helpers.changes import confirm_preview
from tests.helpers.forms import csrf_token, post_form
from tests.helpers.lavery_export import KATHY, LAVERY, NOW, ROWS, SEAN

#: The tests whose subject is not the database (the layout, the CLI's output) run on SQLite only.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


class _Form(HTMLParser):
    """The fields of the page's form that has an input named ``hours``, as a browser would post them."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[list[tuple[str, str]]] = []
        self._select: tuple[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "form":
            self.forms.append([])
        elif tag == "input" and a.get("name") and a.get("type") not in ("submit", "button", "checkbox"):
            self.forms[-1].append((a["name"], a.get("value") or ""))
        elif tag == "select":
            self._select = (a["name"], None)
        elif tag == "option" and self._select and (self._select[1] is None or "selected" in a):
            self._select = (self._select[0], a.get("value", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._select:
            self.forms[-1].append((self._select[0], self._select[1] or ""))
            self._select = None


def form_as_sent(page: str) -> dict[str, list[str]]:
    parser = _Form()
    parser.feed(page)
    fields = next(f for f in parser.forms if any(k == "hours" for k, _ in f))
    out: dict[str, list[str]] = {}
    for k, v in fields:
        out.setdefault(k, []).append(v)
    return out


def _setup(app, email: str = "consultant@example.com") -> int:
    """The export imported into the logged-in account and a retainer for "Panageas, Kathy"."""
    app.config["HOURS_CLOCK"] = lambda: NOW
    with app.app_context():
        from hourtab.core.accounts import find_account

        db = get_db()
        me = find_account(db, email)
        with transaction(db):
            retainer = service.create_retainer(db, me, "Methods comparison", KATHY, service.parse_terms(
                service.TermsInput(hours="20", start="2019-03-01", timezone="America/New_York")))
            import_file(db, me, LAVERY.read_bytes(), LAVERY.name)
        return retainer.id


def _counted(app, rid: int) -> int:
    with app.app_context():
        db = get_db()
        return len(ledger_reads.retainer_ledger(db, db.get(Retainer, rid), NOW).entries)


def _revisions(app) -> int:
    with app.app_context():
        return get_db().scalar(select(func.count(PeriodRevision.id)))


def _closed(app, rid: int) -> dict:
    """Each closed period's (used seconds, entries), as the client's page states them."""
    with app.app_context():
        db = get_db()
        return closed(ledger_reads.retainer_ledger(db, db.get(Retainer, rid), NOW))


def test_saving_the_terms_form_with_only_the_hours_changed_keeps_every_entry(app, logged_in):
    rid = _setup(app)
    edit = f"/retainers/{rid}/edit"
    fields = form_as_sent(logged_in.get(edit).get_data(as_text=True))
    assert fields["match_client"] == [KATHY, ""]   # one box for the name, one empty box to add another
    fields["hours"] = ["25"]
    r = logged_in.post(edit, data=fields)
    assert r.status_code == 302, r.get_data(as_text=True)[:2000]
    assert _counted(app, rid) == ROWS[KATHY] and _revisions(app) == 0
    assert "25&nbsp;h</span> per month" in logged_in.get(f"/retainers/{rid}").get_data(as_text=True)

    # A terms edit that moves entries across months (the account is in UTC, where the export's entries
    # start at 09:00: Honolulu's clock puts them on the day before, so a month's first day's work
    # joins the month before): previewed with the closed periods it revises, nothing saved until confirmed.
    before = _closed(app, rid)
    fields["timezone"] = ["Pacific/Honolulu"]
    first = logged_in.post(edit, data=fields)
    assert first.status_code == 200 and 'id="preview-periods"' in first.get_data(as_text=True)
    assert _closed(app, rid) == before and _revisions(app) == 0
    assert confirm_preview(logged_in, first).status_code == 302
    after = _closed(app, rid)
    assert after != before and _revisions(app) == sum(after.get(s) != f for s, f in before.items())


def test_two_comma_named_clients_count_both_and_a_split_rule_is_previewed_first(app, logged_in):
    rid = _setup(app)
    edit = f"/retainers/{rid}/edit"
    fields = form_as_sent(logged_in.get(edit).get_data(as_text=True))
    fields["match_client"] = ["Panageas", "Kathy"]          # what the comma-separated field used to save
    page = logged_in.post(edit, data=fields).get_data(as_text=True)
    assert "This change revises 11 closed periods" in page and "<td>Methods comparison</td><td>unassigned</td>" in page
    assert '<td class="nowrap">May 2019</td><td class="num">41.75&nbsp;h (19)</td><td class="num">0&nbsp;h (0)</td>' \
        in page
    assert f'href="{edit}" id="cancel-change"' in page
    assert _counted(app, rid) == ROWS[KATHY] and _revisions(app) == 0

    fields["match_client"] = [KATHY, SEAN, ""]
    first = logged_in.post(edit, data=fields)
    # Devlin's 37 entries join closed periods the client has seen: previewed, nothing saved yet.
    assert first.status_code == 200 and "<td>unassigned</td><td>Methods comparison</td>" in first.get_data(as_text=True)
    assert _counted(app, rid) == ROWS[KATHY] and _revisions(app) == 0
    assert confirm_preview(logged_in, first).status_code == 302
    assert _counted(app, rid) == ROWS[KATHY] + ROWS[SEAN]
    detail = logged_in.get(f"/retainers/{rid}").get_data(as_text=True)
    assert "client “Panageas, Kathy” or “Devlin, Sean”" in detail


@SQLITE_ONLY
def test_cli_retainer_edit_previews_a_change_to_closed_periods_and_applies_it_with_yes(app, logged_in):
    rid = _setup(app)
    env = {"HOURTAB_DATABASE_URL": app.config["DATABASE_URL"], "HOURTAB_DATA_DIR": app.config["DATA_DIR"]}
    runner = CliRunner()
    r = runner.invoke(cli, ["retainer", "edit", str(rid), "--match-client", KATHY, "--match-client", SEAN],
                      env=env)
    assert r.exit_code == 2 and r.stderr.strip().endswith("run it again with --yes to apply it."), r.output
    assert "37 entries (" in r.stdout and "unassigned → Methods comparison" in r.stdout
    assert _counted(app, rid) == ROWS[KATHY]
    r = runner.invoke(cli, ["retainer", "edit", str(rid), "--hours", "25", "--json"], env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)["applied"] is True     # touches no closed period
    before = _closed(app, rid)
    r = runner.invoke(cli, ["retainer", "edit", str(rid), "--timezone", "Pacific/Honolulu"], env=env)   # terms
    assert r.exit_code == 2 and "Methods comparison, May 2019 (closed): 41.75 h → 39.75 h used" in r.stdout, r.output
    assert _closed(app, rid) == before and _revisions(app) == 0
    r = runner.invoke(cli, ["retainer", "edit", str(rid), "--match-client", KATHY, "--match-client", SEAN,
                            "--yes", "--json"], env=env)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["applied"] and out["preview"]["moves"][0]["entries"] == ROWS[SEAN]
    assert _counted(app, rid) == ROWS[KATHY] + ROWS[SEAN]


@SQLITE_ONLY
def test_the_inbox_lists_unassigned_work_and_adds_a_client_through_the_preview(app, logged_in):
    rid = _setup(app)
    dashboard = logged_in.get("/dashboard").get_data(as_text=True)
    total = 394 - ROWS[KATHY]
    assert f'<strong id="inbox-count">{total} entries' in dashboard
    inbox = logged_in.get("/inbox").get_data(as_text=True)
    assert f"<h2>{SEAN} · Unmodified transplant</h2>" in inbox
    token = csrf_token(logged_in, "/inbox")
    first = logged_in.post("/inbox/add", data={"client": SEAN, "project": "Unmodified transplant",
                                                "retainer": str(rid), "csrf_token": token})
    assert first.status_code == 200 and 'id="change-preview"' in first.get_data(as_text=True)
    assert _counted(app, rid) == ROWS[KATHY]
    assert confirm_preview(logged_in, first).status_code == 302
    assert _counted(app, rid) == ROWS[KATHY] + ROWS[SEAN]   # the client, all of its projects
    assert f'<strong id="inbox-count">{total - ROWS[SEAN]} entries' in logged_in.get("/dashboard").get_data(
        as_text=True)
    # Archiving keeps what the retainer holds: nothing revised, so it is saved without a question.
    assert post_form(logged_in, f"/retainers/{rid}/archive", {}, page=f"/retainers/{rid}").status_code == 302
    assert _counted(app, rid) == ROWS[KATHY] + ROWS[SEAN]
    new = logged_in.get("/retainers/new?client=Biostats&project=Biostats").get_data(as_text=True)
    assert 'name="match_client" value="Biostats"' in new and 'name="client" required type="text" value="Biostats"' in new


@SQLITE_ONLY
def test_cli_entries_remove_and_restore_preview_a_change_to_a_closed_period(app, logged_in, tmp_path):
    """A re-export lacks one of Kathy's March 2019 rows: removing it revises March, restoring it again."""
    from tests.helpers.lavery_export import HEADER, LINES, alone_on_its_day

    flagged = alone_on_its_day("2019-03")
    rid = _setup(app)
    env = {"HOURTAB_DATABASE_URL": app.config["DATABASE_URL"], "HOURTAB_DATA_DIR": app.config["DATA_DIR"]}
    runner = CliRunner()
    again = tmp_path / "again.csv"
    again.write_text(HEADER + "".join(r for r in LINES if r != flagged))
    r = runner.invoke(cli, ["import", str(again), "--account", "consultant@example.com", "--json"], env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)["missing"] == 1, r.output    # flagged; it still counts
    upload = str(json.loads(r.stdout)["upload_id"])
    before = _closed(app, rid)
    for verb, counted in (("remove", ROWS[KATHY] - 1), ("restore", ROWS[KATHY])):
        r = runner.invoke(cli, ["entries", verb, upload], env=env)
        assert r.exit_code == 2 and r.stderr.strip().endswith("run it again with --yes to apply it."), r.output
        assert f"would be {verb}d  #" in r.stdout and "Methods comparison, Mar 2019 (closed): " in r.stdout
        assert _counted(app, rid) == ROWS[KATHY] - (verb == "restore")              # nothing changed
        r = runner.invoke(cli, ["entries", verb, upload, "--yes", "--json"], env=env)
        assert r.exit_code == 0 and len(json.loads(r.stdout)["entry_ids"]) == 1, r.output
        assert _counted(app, rid) == counted
    assert _closed(app, rid) == before and _revisions(app) == 2
