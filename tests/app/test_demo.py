"""The demo loader: shipped samples only, dates moved to the present, idempotent."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

import pytest
from sqlalchemy import func, select

from app.demo import BERT_CLIENT, DEMO_FILES, SAMPLES, load_demo, shifted_export
from hourtab.core.blobs import LocalBlobStore
from hourtab.retainers import ledger_reads
from hourtab.retainers.models import Retainer
from hourtab.timesheets.models import TimeEntry


def test_shifted_export_moves_dates_by_whole_weeks_to_end_this_week():
    today = dt.date(2026, 3, 18)
    data, first = shifted_export((SAMPLES / "toggl_floresfdev_2017-08.csv").read_bytes(), today)
    text = data.decode()
    assert "2017-" not in text
    shift = first - dt.date(2017, 8, 1)
    assert shift.days % 7 == 0
    last = dt.date(2017, 8, 31) + shift
    assert today - dt.timedelta(days=6) <= last <= today


def test_demo_retainers_cover_recent_months_only(db_session, tmp_path):
    today = dt.date.today()  # the ledger runs to the real today
    load_demo(db_session, LocalBlobStore(tmp_path), today=today)
    load_demo(db_session, LocalBlobStore(tmp_path), today=today)
    names = {name for _, name, *_ in DEMO_FILES}
    retainers = db_session.scalars(select(Retainer).where(Retainer.name.in_(names))).all()
    assert len(retainers) == 2
    for retainer in retainers:
        ledger = ledger_reads.retainer_ledger(db_session, retainer)
        assert 1 <= len(ledger.periods) <= 3, [p.period.label for p in ledger.periods]
        assert sum(p.used_s for p in ledger.periods) > 0
    oldest = db_session.scalar(select(func.min(TimeEntry.local_date)))
    assert oldest >= today - dt.timedelta(days=62)


PLACEHOLDERS = re.compile(r"Client \d|Project [A-H]\b|Recurring activity|Lorem ipsum|Demo Client|Demo Consultant|"
                          r"floresf|Fernando Flores")


# One backend: the loader's writes are checked on both by the tests above and in test_imports.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_visitor_sees_what_hourtab_is_and_the_demo_page_an_ml_consultants_month(app):
    """``/`` says what HourTab is and links to the demo's public page, which reads as an ML consultant's
    month: a BERT fine-tuning client, the incident's work sessions and its log entry, no placeholders."""
    from app.db import get_db
    from app.extensions import blobs

    visitor = app.test_client()
    before = visitor.get("/")
    assert before.status_code == 200 and "retainer" in before.get_data(as_text=True)
    assert 'id="demo-link"' not in before.get_data(as_text=True)        # no demo loaded: no dead link
    with app.app_context():
        load_demo(get_db(), blobs())
        names = {(e.client, e.project, e.description, e.user_name) for e in get_db().scalars(select(TimeEntry))}
        retainers = {r.client for r in get_db().scalars(select(Retainer))}
    assert [n for n in names if PLACEHOLDERS.search(" ".join(v or "" for v in n))] == []
    assert BERT_CLIENT in retainers and not any(PLACEHOLDERS.search(c) for c in retainers)
    home = visitor.get("/").get_data(as_text=True)
    assert "ML consultants" in home and "Log in" in home
    page_url = re.search(r'<a href="(/h/[^"]+)" id="demo-link">', home).group(1)
    page = visitor.get(page_url).get_data(as_text=True)
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", page[page.index("</style>"):])).split())
    assert "BERT fine-tuning retainer" in text and BERT_CLIENT in text
    assert "Profiled the slow training run against a baseline" in text or "Validated step times" in text
    assert re.search(r'class="incident-log"', page) and "Incident writeup: Fine-tuning steps slowed" in text
    assert not PLACEHOLDERS.search(text), PLACEHOLDERS.search(text)
