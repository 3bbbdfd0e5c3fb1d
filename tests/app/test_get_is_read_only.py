"""No GET handler writes to the database: every GET route, anonymous and logged in, with real ids.

The demo account holds one of everything (imports, retainers, a published incident with evidence),
so each route's parameters are filled with ids and tokens that exist; a statement listener on the
app's engine records every INSERT, UPDATE or DELETE the walk sets off.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import event, select

from tests.helpers.forms import post_form
from tests.helpers.hours import toggl_csv

WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE|MERGE|CREATE|DROP|ALTER|COPY|TRUNCATE)\b", re.IGNORECASE)


def _demo_values(app) -> tuple[dict[str, str], str, str]:
    from app.db import get_db
    from app.demo import load_demo
    from app.extensions import blobs
    from hourtab.alerts import service as alerts
    from hourtab.core.accounts import find_account
    from hourtab.core.db import transaction
    from hourtab.core.jobs import create_job
    from hourtab.imports.importer import import_file
    from hourtab.retainers.models import Retainer
    from hourtab.timesheets.models import Upload
    from incidents.evidence.models import Evidence
    from incidents.writeups.models import Incident

    with app.app_context():
        db = get_db()
        email, password = load_demo(db, blobs())
        incident = db.scalars(select(Incident).where(Incident.status == "published")).first()
        retainer = db.get(Retainer, incident.retainer_id)
        # An import just before the walk: its entries must already be assigned, not on first view.
        with transaction(db):
            import_file(db, find_account(db, email), toggl_csv([(retainer.client, "late", retainer.start_date
                                                                 .isoformat(), "22:00:00", "00:30:00")]), "x.csv")
        with transaction(db):
            subscription = alerts.subscribe(db, retainer, "client@example.com")
            job = create_job(db, retainer.account_id, "demo_setup", {})
        values = {
            "sub": subscription.token, "job_id": job.id, "invoice_id": _demo_invoice(db, retainer.account_id),
            "token": retainer.public_token, "month": retainer.start_date.strftime("%Y-%m"), "slug": incident.slug,
            "incident_id": str(incident.id), "retainer_id": str(retainer.id),
            "upload_id": str(db.scalar(select(Upload.id).order_by(Upload.id))),
            "evidence_id": str(db.scalar(select(Evidence.id).order_by(Evidence.id))),
            "filename": "style.css",
        }
    return values, email, password


def _demo_invoice(db, account_id: int) -> str:
    """An invoice of a closed month of one of the demo's retainers, priced in euros for it."""
    import datetime as dt

    from sqlalchemy import update

    from hourtab.core.accounts import Account
    from hourtab.core.db import transaction
    from hourtab.invoices import service as invoices
    from hourtab.retainers.models import Retainer, RetainerTerms

    account = db.get(Account, account_id)
    with transaction(db):
        for model, key in ((Retainer, Retainer.account_id), (RetainerTerms, RetainerTerms.account_id)):
            db.execute(update(model).where(key == account_id).values(fee=3000, currency="EUR"))
        invoices.save_invoice_profile(db, account, name="Demo Consulting", payment="Bank transfer")
    db.expire_all()
    now = dt.datetime.now(dt.UTC)
    for retainer in db.scalars(select(Retainer).where(Retainer.account_id == account_id)):
        months = invoices.invoice_months(db, account, retainer.id, now)
        if months:
            with transaction(db):
                return str(invoices.issue_invoice(db, account, retainer.id, months[0][0], now).id)
    raise AssertionError("no demo retainer has a closed month")


def _urls(app, values: dict[str, str]) -> list[str]:
    urls = []
    for rule in app.url_map.iter_rules():
        if "GET" not in rule.methods:
            continue
        missing = set(rule.arguments) - set(values)
        assert not missing, f"no realistic value for {sorted(missing)} in {rule.rule}"
        urls.append(re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", lambda m: values[m.group(1)], rule.rule))
    return urls


@pytest.fixture
def writes(app):
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if WRITES.match(statement):
            seen.append(statement.split("\n", 1)[0][:120])

    engine = app.extensions["hourtab.engine"]
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def test_no_get_handler_writes(app, writes):
    app.config["SMTP_URL"] = "smtp://127.0.0.1:9"  # alert pages exist only where e-mail is set up; nothing is sent
    values, email, password = _demo_values(app)
    urls = _urls(app, values)
    anonymous, consultant = app.test_client(), app.test_client()
    assert post_form(consultant, "/login", {"email": email, "password": password}).status_code == 302
    writes.clear()
    statuses = {}
    for client, who in ((anonymous, "anonymous"), (consultant, "consultant")):
        for url in urls:
            response = client.get(url)
            statuses[who, url] = response.status_code
            assert response.status_code < 500, (who, url)
            assert not writes, f"GET {url} as {who} wrote: {writes}"
    # The walk reached real pages, not just redirects to the log-in page and 404s.
    assert statuses["anonymous", f"/h/{values['token']}"] == 200
    assert statuses["anonymous", f"/h/{values['token']}/incidents/{values['slug']}"] == 200
    assert statuses["consultant", f"/retainers/{values['retainer_id']}"] == 200
    assert statuses["consultant", f"/incidents/{values['incident_id']}"] == 200
    assert statuses["consultant", f"/evidence/{values['evidence_id']}"] == 200


def test_the_listener_sees_writes_an_unknown_token_is_counted(app, writes):
    """The one deliberate write behind a GET: a miss on a public URL counts towards the rate limit."""
    assert app.test_client().get("/h/" + "Z" * 32).status_code == 404
    assert any("rate_events" in w for w in writes), writes
