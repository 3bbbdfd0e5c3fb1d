"""Run names and metric keys reach matplotlib as plain text: TeX such as ``$\\frac{$`` is drawn, not parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.db import get_db
from hourtab.core.db import transaction
from incidents.writeups import service
from tests.helpers.hours import AUG_20, setup_retainer

MATH = "$\\frac{$"


def _role_runs(run, name: str):
    return [("incident", _renamed(run, name)), ("baseline", _renamed(run, name + " base"))]


def _renamed(run, name: str):
    import copy

    clone = copy.copy(run)
    clone.name = name
    return clone


def test_every_chart_draws_a_hostile_run_name(hostile_run):
    import inspect

    from incidents.evidence.wandb import load_run
    from incidents.writeups.report import charts

    run = load_run(hostile_run["file"])
    assert MATH in run.name
    runs = _role_runs(run, f"{MATH} ^ _ \\x")
    drawn = [charts.gpu_utilisation_chart(runs), charts.loss_curves(runs)]
    if "profile_modes" in inspect.signature(charts.step_time_distribution).parameters:
        drawn.append(charts.step_time_distribution(runs, [], None))
    assert any(chart.uri for chart in drawn)


@pytest.fixture
def published(app, hostile_run):
    app.config["HOURS_CLOCK"] = lambda: AUG_20
    with app.app_context():
        db = get_db()
        account, retainer = setup_retainer(db, email="consultant@example.com")
        from hourtab.core.blobs import blob_store

        blobs = blob_store(Path(app.config["DATA_DIR"]))
        with transaction(db):
            incident = service.create_incident(db, account.id, f"Run {MATH}", retainer.id)
            for role in ("incident", "baseline"):
                ev = service.ingest_run_path(db, account.id, hostile_run["dir"], blobs)
                service.attach_run(db, incident, ev.id, role)
            service.refresh_generated(db, incident, blobs, f"Ada {MATH}")
            service.publish(db, incident)
        return {"token": retainer.public_token, "slug": incident.slug, "id": incident.id,
                "account_id": account.id}


def _log_in_as_owner(app, account_id: int):
    from app.auth import CurrentAccount
    from hourtab.core import sessions
    from hourtab.core.accounts import Account

    client = app.test_client()
    with app.app_context():
        db = get_db()
        with transaction(db):
            token = sessions.open_session(db, account_id)
        user_id = CurrentAccount(db.get(Account, account_id), token).id
    with client.session_transaction() as s:
        s["_user_id"] = user_id
        s["_fresh"] = True
    return client


def test_consultant_preview_and_pdf(app, published):
    client = _log_in_as_owner(app, published["account_id"])
    r = client.get(f"/incidents/{published['id']}/preview")
    assert r.status_code == 200, r.get_data(as_text=True)[-500:]
    assert "data:image/svg+xml" in r.get_data(as_text=True)
    pdf = client.get(f"/incidents/{published['id']}.pdf")
    assert pdf.status_code == 200 and pdf.data.startswith(b"%PDF")


def test_public_incident_page_and_pdf(app, published):
    client = app.test_client()
    base = f"/h/{published['token']}/incidents/{published['slug']}"
    r = client.get(base)
    assert r.status_code == 200, r.get_data(as_text=True)[-500:]
    assert "data:image/svg+xml" in r.get_data(as_text=True)
    pdf = client.get(base + ".pdf")
    assert pdf.status_code == 200 and pdf.data.startswith(b"%PDF")
