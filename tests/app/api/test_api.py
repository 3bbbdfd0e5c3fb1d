"""/api/v1 with personal access tokens: scoped to the token's account, 401 for a wrong or revoked token,
rate-limited, never authenticated by the session cookie; every answer checked against the OpenAPI file."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import pytest
from click.testing import CliRunner
from flask_wtf.csrf import CSRFError
from sqlalchemy import func, select

from app.cli import cli
from app.db import get_db
from hourtab.core import apitokens
from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import service
from hourtab.timesheets.models import Upload
from tests.factories import make_account
from tests.helpers.api_schema import check
from tests.helpers.forms import PASSWORD, csrf_token, post_form
from tests.helpers.hours import AUG_20, toggl_csv

AUGUST = [("Client 1", "Training run", "2017-08-02", "09:00:00", "02:00:00"),
          ("Client 1", "Eval; notes, \"quoted\"", "2017-08-03", "10:00:00", "01:30:00")]
MORE = [("Client 1", "Tuning", "2017-08-10", "09:00:00", "03:00:00")]


@dataclass
class Side:
    account_id: int
    retainer_id: int
    token: str
    token_id: int

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def _side(db, email: str) -> Side:
    account = make_account(db, email)
    with transaction(db):
        import_file(db, account, toggl_csv(AUGUST), "august.csv")
        retainer = service.create_retainer(db, account, f"Retainer of {email}", "Client 1",
                                           service.parse_terms(service.TermsInput(hours="20", start="2017-08-01")))
        row, token = apitokens.create(db, account.id, "script")
    return Side(account.id, retainer.id, token, row.id)


@pytest.fixture
def api(app):
    """Two accounts, each with a retainer, an import and a token; the pages' clock on 20 Aug 2017."""
    app.config["HOURS_CLOCK"] = lambda: AUG_20
    with app.app_context():
        db = get_db()
        return _side(db, "ada@example.com"), _side(db, "bob@example.com")


def test_a_token_sees_and_imports_into_its_own_account_only(app, api):
    ada, bob = api
    client = app.test_client()
    listed = check(client.get("/api/v1/retainers", headers=ada.auth), "/api/v1/retainers", 200)
    assert [r["id"] for r in listed["retainers"]] == [ada.retainer_id]
    mine = listed["retainers"][0]
    assert mine["calendar_url"] == mine["public_url"] + ".ics"
    ledger_path = "/api/v1/retainers/{retainer_id}/ledger"
    body = check(client.get(mine["ledger_url"], headers=ada.auth), ledger_path, 200)
    # The same figures as the client's JSON: 3.5 h used of 20 in August.
    public = client.get(mine["public_url"].removeprefix("http://localhost") + ".json").get_json()
    assert body["ledger"]["periods"] == public["periods"]
    assert body["ledger"]["current"]["used_seconds"] == 12600
    # Bob's retainer answers exactly as one that does not exist.
    answers = [check(client.get(f"/api/v1/retainers/{n}/ledger", headers=ada.auth), ledger_path, 404)["message"]
               .replace(str(n), "N") for n in (bob.retainer_id, 999999)]
    assert answers[0] == answers[1]

    form = {"file": (io.BytesIO(toggl_csv(MORE)), "september.csv"), "retainer": str(ada.retainer_id)}
    response = client.post("/api/v1/imports", headers=ada.auth, data=form)  # no CSRF token: Bearer needs none
    accepted = check(response, "/api/v1/imports", 202)
    location = response.headers["Location"]
    assert location == accepted["job"]["url"] == f"/api/v1/jobs/{accepted['job']['id']}"
    job = check(client.get(location, headers=ada.auth), "/api/v1/jobs/{job_id}", 200)
    # Tests run the queue inline: the job is done, and the ledger has the new 3 h.
    assert job["status"] == "done" and job["kind"] == "csv_confirm"
    assert job["result"] == {"upload_id": accepted["upload_id"],
                             "counts": {"new": 1, "unchanged": 0, "changed": 0, "missing": 0, "skipped": 0,
                                        "adopted": 0}}
    ledger = client.get(mine["ledger_url"], headers=ada.auth).get_json()["ledger"]
    assert ledger["current"]["used_seconds"] == 12600 + 3 * 3600
    check(client.get(location, headers=bob.auth), "/api/v1/jobs/{job_id}", 404)  # Ada's job, Bob's token

    # A file that is no export: the job fails and says why, without a server path.
    junk = {"file": (io.BytesIO(b"%PDF-1.7 not a csv\x00\xff" * 20), "junk.csv")}
    failed_job = check(client.post("/api/v1/imports", headers=ada.auth, data=junk), "/api/v1/imports", 202)["job"]
    failed = check(client.get(failed_job["url"], headers=ada.auth), "/api/v1/jobs/{job_id}", 200)
    assert failed["status"] == "failed" and "not a CSV" in failed["error"], failed
    assert app.config["DATA_DIR"] not in failed["error"]


REFUSED_OPTIONS = [
    ({}, "field named `file`"),
    ({"retainer": "BOB"}, "No retainer"),
    ({"retainer": "-1"}, "No retainer"),
    ({"date_order": "ymd"}, "date_order"),
    ({"format": "excel"}, "Unknown format"),
    ({"timezone": "Mars/Olympus"}, "Unknown time zone"),
    ({"profile": "nope"}, "profile"),
    ({"skip_invalid": "maybe"}, "skip_invalid"),
]


def test_refused_import_options_store_nothing(app, api):
    ada, bob = api
    client = app.test_client()
    for fields, why in REFUSED_OPTIONS:
        form = {k: str(bob.retainer_id) if v == "BOB" else v for k, v in fields.items()}
        if why != "field named `file`":
            form["file"] = (io.BytesIO(toggl_csv(MORE)), "x.csv")
        body = check(client.post("/api/v1/imports", headers=ada.auth, data=form), "/api/v1/imports", 400)
        assert why in body["message"], (fields, body)
    with app.app_context():
        assert get_db().scalar(select(func.count(Upload.id)).where(Upload.account_id == ada.account_id)) == 1


def test_cli_tokens_work_until_revoked_and_calls_are_limited(app, api, database_url, tmp_path):
    ada, bob = api
    client = app.test_client()
    env = {"HOURTAB_DATABASE_URL": database_url, "HOURTAB_DATA_DIR": str(tmp_path / "cli")}
    run = CliRunner().invoke
    created = run(cli, ["token", "create", "--account", "ada@example.com", "--name", "nightly sync", "--json"], env=env)
    assert created.exit_code == 0, created.output
    made = json.loads(created.stdout)
    assert set(made) == {"id", "token"} and made["token"].startswith("htpat_")
    auth = {"Authorization": f"Bearer {made['token']}"}
    assert client.get("/api/v1/retainers", headers=auth).status_code == 200
    listed = run(cli, ["token", "list", "--account", "ada@example.com", "--json"], env=env)
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert set(rows) == {made["id"], ada.token_id} and rows[made["id"]]["last_used_at"] is not None
    assert made["token"] not in listed.stdout and made["token"][:10] in listed.stdout
    with app.app_context():  # only a hash of the token is kept
        row = get_db().get(apitokens.ApiToken, made["id"])
        assert made["token"] not in (row.digest, row.hint, row.name)
    revoked = run(cli, ["token", "revoke", str(made["id"]), "--account", "ada@example.com"], env=env)
    assert revoked.exit_code == 0 and "Revoked" in revoked.stdout
    with app.app_context(), transaction(get_db()):  # live tokens are capped; a revoked one does not count
        for _ in range(apitokens.MAX_LIVE - 1):
            apitokens.create(get_db(), ada.account_id, "batch")
    full = run(cli, ["token", "create", "--account", "ada@example.com"], env=env)
    assert full.exit_code == 2 and "revoke one first" in full.stderr
    refused = client.get("/api/v1/retainers", headers=auth)
    check(refused, "/api/v1/retainers", 401)
    assert refused.headers["WWW-Authenticate"].startswith('Bearer realm="HourTab API", error="invalid_token"')
    assert client.post("/api/v1/imports", headers=auth,
                       data={"file": (io.BytesIO(toggl_csv(MORE)), "x.csv")}).status_code == 401
    missing = client.get("/api/v1/retainers")
    check(missing, "/api/v1/retainers", 401)
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="HourTab API"'
    for header in (f"Bearer {ada.token}x", f"Basic {ada.token}", f"Bearer {ada.token[6:]}"):
        assert client.get("/api/v1/retainers", headers={"Authorization": header}).status_code == 401

    app.config.update(API_RATE_LIMIT=3, API_MISS_LIMIT=2)
    assert [client.get("/api/v1/retainers", headers=ada.auth).status_code for _ in range(3)] == [200] * 3
    limited = client.get("/api/v1/retainers", headers=ada.auth)
    check(limited, "/api/v1/retainers", 429)
    assert int(limited.headers["Retry-After"]) >= 1
    assert client.get("/api/v1/retainers", headers=bob.auth).status_code == 200  # each token its own count
    # Wrong tokens from this address were counted above (four so far): past the limit, 429.
    assert client.get("/api/v1/retainers", headers={"Authorization": "Bearer htpat_guess"}).status_code == 429


def test_settings_page_tokens_and_the_cookie_authenticates_nothing_under_v1(app, logged_in):
    made = post_form(logged_in, "/account/tokens", {"name": "Invoicing script"}, page="/account/settings")
    assert made.status_code == 200 and made.headers["Cache-Control"] == "no-store"
    token = made.get_data(as_text=True).split('id="new-token" type="text" readonly value="')[1].split('"')[0]
    auth = {"Authorization": f"Bearer {token}"}
    assert app.test_client().get("/api/v1/retainers", headers=auth).get_json() == {"retainers": []}
    settings = logged_in.get("/account/settings").get_data(as_text=True)
    assert "Invoicing script" in settings and token[:10] in settings and token not in settings
    token_id = int(settings.split('id="token-')[1].split('"')[0])
    assert post_form(logged_in, "/account/tokens", {"name": "  "}, page="/account/settings").status_code == 302

    # The logged-in browser's cookie reaches /api/me, but authenticates nothing under /api/v1.
    assert logged_in.get("/api/me").status_code == 200
    assert logged_in.get("/api/v1/retainers").status_code == 401
    assert logged_in.post("/api/v1/imports", data={"file": (io.BytesIO(toggl_csv(MORE)), "x.csv")}).status_code == 401
    with app.app_context():
        assert get_db().scalar(select(func.count(Upload.id))) == 0
    # Elsewhere under /api, an unsafe request authenticated by the cookie is CSRF-checked as any form is.
    from app.api.bearer import check_api_request

    with app.test_request_context("/api/me", method="POST"), pytest.raises(CSRFError):
        check_api_request()

    revoke = f"/account/tokens/{token_id}/revoke"
    other = app.test_client()  # nobody else can revoke it: the same answer as no such token
    post_form(other, "/signup", {"email": "bob@example.com", "password": PASSWORD, "timezone": "UTC"})
    assert other.post(revoke, data={"csrf_token": csrf_token(other, "/account/settings")}).status_code == 404
    assert app.test_client().get("/api/v1/retainers", headers=auth).status_code == 200
    assert logged_in.post(revoke, data={"csrf_token": csrf_token(logged_in, "/account/settings")}).status_code == 302
    assert app.test_client().get("/api/v1/retainers", headers=auth).status_code == 401
    assert "revoked" in logged_in.get("/account/settings").get_data(as_text=True)
