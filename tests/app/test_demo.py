"""The demo loader: shipped samples only, dates moved to the present, idempotent."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select

from app.demo import DEMO_FILES, SAMPLES, load_demo, shifted_export
from hourtab.core.blobs import LocalBlobStore
from hourtab.retainers import service
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
        ledger = service.retainer_ledger(db_session, retainer)
        assert 1 <= len(ledger.periods) <= 3, [p.period.label for p in ledger.periods]
        assert sum(p.used_s for p in ledger.periods) > 0
    oldest = db_session.scalar(select(func.min(TimeEntry.local_date)))
    assert oldest >= today - dt.timedelta(days=62)
