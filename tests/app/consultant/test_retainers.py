"""The consultant's retainer pages, the plan limit, and the ``retainer``/``ledger`` CLI."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from app.cli import cli
from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.consultant_forms import create_retainer, import_sample
from tests.helpers.forms import post_form


def test_create_shows_ledger_link_and_unmatched(app, logged_in):
    import_sample(app)
    r = create_retainer(logged_in)
    assert r.status_code == 302
    page = logged_in.get(r.headers["Location"]).get_data(as_text=True)
    assert "Retainer created" in page and 'id="ledger"' in page and "Aug 2017" in page
    url = re.search(r'id="public-url" type="text" readonly value="([^"]+)"', page).group(1)
    assert re.fullmatch(r"http://localhost/h/[A-Za-z0-9_-]{32}", url)
    # The sample's 49 "Client 2" rows count against nothing: the page says so and links to the inbox.
    assert "49 entries (" in page and 'id="inbox-link"' in page
    assert logged_in.get(url.replace("http://localhost", "")).status_code == 200
    dashboard = logged_in.get("/dashboard").get_data(as_text=True)
    assert "ML platform retainer" in dashboard and ("&nbsp;h</span> left" in dashboard or "&nbsp;h</span> over" in dashboard)


def test_second_retainer_on_free_plan_is_refused_with_plan_and_limit(app, logged_in):
    assert create_retainer(logged_in).status_code == 302
    r = create_retainer(logged_in, name="Second", client="Client 2")
    assert r.status_code == 403
    text = r.get_data(as_text=True)
    assert "The free plan keeps 1 active retainer" in text and "pro" in text
    assert logged_in.get("/retainers").get_data(as_text=True).count("/retainers/") >= 1


def test_edit_terms_rotate_disable_and_credits(app, logged_in):
    import_sample(app)
    location = create_retainer(logged_in).headers["Location"]
    rid = int(location.rsplit("/", 1)[1])
    page = logged_in.get(location).get_data(as_text=True)
    url = re.search(r'readonly value="http://localhost(/h/[^"]+)"', page).group(1)

    r = post_form(logged_in, f"/retainers/{rid}/edit", {**FORM, "hours": "200"})
    assert r.status_code == 302
    assert "200&nbsp;h</span> per month" in logged_in.get(url).get_data(as_text=True)
    r = post_form(logged_in, f"/retainers/{rid}/edit", {**FORM, "timezone": "Mars/Olympus"})
    assert r.status_code == 400 and "Unknown time zone" in r.get_data(as_text=True)

    r = post_form(logged_in, f"/retainers/{rid}/credits",
                  {"kind": "adjustment", "on": "2017-08-10", "hours": "-1.5", "reason": "Duplicate <b>call</b>"},
                  page=location)
    assert r.status_code == 302
    public = logged_in.get(url).get_data(as_text=True)
    assert "Duplicate &lt;b&gt;call&lt;/b&gt;" in public and "-1.5&nbsp;h" in public

    assert post_form(logged_in, f"/retainers/{rid}/token/rotate", {}, page=location).status_code == 302
    assert logged_in.get(url).status_code == 404
    page = logged_in.get(location).get_data(as_text=True)
    new_url = re.search(r'readonly value="http://localhost(/h/[^"]+)"', page).group(1)
    assert logged_in.get(new_url).status_code == 200
    assert post_form(logged_in, f"/retainers/{rid}/token/disable", {}, page=location).status_code == 302
    assert logged_in.get(new_url).status_code == 404


def test_other_accounts_retainer_is_not_found(app, logged_in):
    location = create_retainer(logged_in).headers["Location"]
    other = app.test_client()
    post_form(other, "/signup", {"email": "eve@example.com", "password": "correct horse battery",
                                 "timezone": "UTC"})
    assert other.get(location).status_code == 404
    assert post_form(other, location + "/token/rotate", {}, page="/dashboard").status_code == 404


def test_cli_create_ledger_rotate(app, database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "cli"))
    runner = CliRunner()
    r = runner.invoke(cli, ["user", "create", "cli@example.com", "--password-stdin"],
                      input="correct horse battery\n")
    assert r.exit_code == 0, r.output
    import_sample(app, "cli@example.com")
    args = ["retainer", "create", "--account", "cli@example.com", "--name", "CLI retainer", "--client", "Client 1",
            "--hours", "160", "--start", "2017-08-01", "--timezone", "UTC", "--rounding", "6", "--json"]
    r = runner.invoke(cli, args)
    assert r.exit_code == 0, r.output
    created = json.loads(r.stdout)
    assert set(created) == {"id", "public_url"}
    assert re.fullmatch(r"http://127\.0\.0\.1:8000/h/[A-Za-z0-9_-]{32}", created["public_url"])

    r = runner.invoke(cli, ["retainer", "create", *args[2:]])
    assert r.exit_code == 2 and "The free plan keeps 1 active retainer" in r.output

    r = runner.invoke(cli, ["ledger", str(created["id"]), "--json"])
    assert r.exit_code == 0, r.output
    ledger = json.loads(r.stdout)
    aug = ledger["periods"][0]
    assert aug["start"] == "2017-08-01" and aug["entries"] == 168 and aug["allotment_hours"] == "160"
    assert aug["used_seconds"] % 360 == 0  # 6-minute rounding per entry
    text = runner.invoke(cli, ["ledger", str(created["id"])]).output
    assert "Aug 2017" in text and "Closing" in text

    r = runner.invoke(cli, ["retainer", "rotate-token", str(created["id"])])
    assert r.exit_code == 0 and r.output.strip() != created["public_url"]
    assert runner.invoke(cli, ["ledger", "999999"]).exit_code == 2


def _ids(html: str) -> list[str]:
    return re.findall(r'\sid="([^"]+)"', html)


def test_forms_write_valid_attributes_and_ids_once(app, logged_in):
    """No ``autocomplete="None"`` (a field without a hint), no id twice (the CSRF fields of many forms)."""
    new = logged_in.get("/retainers/new").get_data(as_text=True)
    location = create_retainer(logged_in, timezone="America/New_York").headers["Location"]
    rid = int(location.rsplit("/", 1)[1])
    post_form(logged_in, f"{location}/credits", {"kind": "topup", "on": "2017-08-02", "hours": "2", "reason": "x"},
              page=location)
    for name, html in [("new", new), ("edit", logged_in.get(f"{location}/edit").get_data(as_text=True)),
                       ("detail", logged_in.get(location).get_data(as_text=True)),
                       ("settings", logged_in.get("/account/settings").get_data(as_text=True))]:
        assert 'autocomplete="None"' not in html, name
        ids = _ids(html)
        assert sorted({i for i in ids if ids.count(i) > 1}) == [], name
    # The time zone is chosen from the list, as in Settings, with the retainer's own selected.
    edit = logged_in.get(f"/retainers/{rid}/edit").get_data(as_text=True)
    assert re.search(r'<select[^>]*id="timezone"', edit)
    assert re.search(r'<option selected value="America/New_York">|<option value="America/New_York" selected>', edit)
    assert 'value="Europe/Istanbul"' in edit and 'value="UTC"' in edit


def test_the_form_picks_the_clients_language_and_refuses_one_not_shipped(app, logged_in):
    refused = create_retainer(logged_in, language="tlh")
    assert refused.status_code == 400 and "Not a valid choice" in refused.get_data(as_text=True)
    r = create_retainer(logged_in, language="de")
    assert r.status_code == 302
    edit = logged_in.get(r.headers["Location"] + "/edit").get_data(as_text=True)
    assert re.search(r'<option selected value="de">Deutsch</option>|<option value="de" selected>', edit), edit
