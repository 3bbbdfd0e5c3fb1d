"""Drill: two misbehaving trackers (one answering a byte at a time, one paging without end) and a healthy
one, on a two-thread consumer with syncs due every few seconds. The healthy account's sync and another
account's upload finish within a minute of falling due, and the web tier answers a client's public page
throughout. Real parts: the app served over HTTP, the worker's own threads and reaper (which queues the
due syncs), the SQLite queue, both databases; budgets of a few seconds so the drill stays short."""

from __future__ import annotations

import datetime as dt
import io
import threading
import time

import pytest
import requests
from sqlalchemy import select, update

from hourtab.core.db import transaction, utcnow
from hourtab.core.jobs import Job
from hourtab.sync.models import Connection
from tests.helpers.fake_trackers import Clockify, Kimai, Toggl, serving
from tests.helpers.forms import csrf_token, signup
from tests.helpers.servers import serve
from tests.helpers.sync_runs import TOKEN, at, make_retainer, months

pytestmark = pytest.mark.slow

#: "Within a minute of falling due", as the issue asks; the drill's budgets make it a few seconds.
WITHIN_S = 60
#: Wide enough that the healthy tracker's sync fits on a loaded machine (it takes well under a second), and
#: still a small part of what the misbehaving ones would take (the drip alone needs over a minute).
BUDGET_S = 6


def _connect(app, email: str, name: str, url: str) -> tuple[int, int | None]:
    """An account with a connection to ``name`` at ``url``; (connection id, its retainer's public token)."""
    from app.extensions import sync_limits, tokens
    from hourtab.core.accounts import create_account
    from hourtab.sync import service

    with app.app_context(), app.extensions["hourtab.sessionmaker"]() as s:
        with transaction(s):
            account = create_account(s, email, "a long enough password")
        retainer = make_retainer(s, account, "Acme GmbH") if name == "toggl" else None
        with transaction(s):
            connection = service.connect(s, account, tokens(), name, TOKEN, api_url=url,
                                         limits=sync_limits(app.config))
        return connection.id, retainer.public_token if retainer else None


def _due(app, ids: list[int], at_: dt.datetime) -> None:
    with app.extensions["hourtab.sessionmaker"]() as s, transaction(s):
        s.execute(update(Connection).where(Connection.id.in_(ids)).values(next_sync_at=at_))


def test_two_misbehaving_trackers_delay_no_other_account(make_app):
    from app.jobs.worker import Worker

    app = make_app(QUEUE_IMMEDIATE=False, HOURTAB_JOB_LEASE_S="1.5", HOURTAB_SYNC_MINUTES="0.05",
                   HOURTAB_SYNC_BUDGET_S=str(BUDGET_S), HOURTAB_SYNC_REQUEST_S="3", HOURTAB_CSV_QUEUE_ABOVE_KB="0.01")
    drip, endless, healthy = Clockify(TOKEN), Kimai(TOKEN, endless=True), Toggl(TOKEN)
    day = months()[1]
    endless.add(at(day, 8), 600)
    drip.add(at(day, 8), 600)            # an answer of 1.5 kB: over a minute at its pace
    for i in range(3):
        healthy.add(at(day, 9 + i), 1800, f"Entry {i}")
    with serving(clockify=drip, kimai=endless, toggl=healthy) as trackers, serve(app) as web:
        bad = [_connect(app, "drip@example.com", "clockify", trackers.url)[0],
               _connect(app, "endless@example.com", "kimai", trackers.url)[0]]
        good, public = _connect(app, "healthy@example.com", "toggl", trackers.url)
        drip.drip_s = 0.05
        uploader = app.test_client()
        signup(uploader, email="uploader@example.com")

        latencies: list[tuple[int, float]] = []
        stop = threading.Event()

        def read_public_page() -> None:
            while not stop.is_set():
                started = time.monotonic()
                status = requests.get(f"{web}/h/{public}", timeout=30).status_code
                latencies.append((status, time.monotonic() - started))
                stop.wait(0.1)

        worker = Worker(app, threads=2)
        reader = threading.Thread(target=read_public_page, daemon=True)
        now = utcnow()
        _due(app, bad, now - dt.timedelta(seconds=2))        # the misbehaving ones fall due first
        _due(app, [good], now)
        due_at = time.monotonic()
        worker.start()
        reader.start()
        try:
            token = csrf_token(uploader, "/imports")
            csv = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
                   f"Duration,Tags\nUp,up@example.com,Globex,Web,,Work,Yes,{day},09:00:00,{day},10:00:00,"
                   "01:00:00,\n").encode()
            r = uploader.post("/imports", data={"csrf_token": token, "file": (io.BytesIO(csv), "export.csv")},
                              content_type="multipart/form-data")
            assert r.status_code == 302, r.get_data(as_text=True)
            uploaded_at = time.monotonic()
            synced_at = upload_done_at = None
            ended: list[Job] = []
            while time.monotonic() - uploaded_at < WITHIN_S and (synced_at is None or upload_done_at is None
                                                                 or len({j.params["connection_id"] for j in ended}) < 2):
                with app.extensions["hourtab.sessionmaker"]() as s:
                    if synced_at is None and s.get(Connection, good).last_success_at is not None:
                        synced_at = time.monotonic()
                    upload = s.scalars(select(Job).where(Job.kind == "csv_read")).first()
                    if upload_done_at is None and upload is not None and upload.status == "done":
                        upload_done_at = time.monotonic()
                    # The misbehaving ones: each sync of them ends at its budget, and they keep coming back.
                    ended = list(s.scalars(select(Job).where(Job.kind == "sync_run", Job.status == "failed")))
                time.sleep(0.1)
        finally:
            stop.set()
            worker.stop()
            reader.join(30)
    assert synced_at is not None and synced_at - due_at < WITHIN_S, "the healthy sync waited too long"
    assert upload_done_at is not None and upload_done_at - uploaded_at < WITHIN_S, "the upload waited too long"
    assert {j.params["connection_id"] for j in ended} == set(bad)
    assert all((j.finished_at - j.started_at).total_seconds() < BUDGET_S + 3 for j in ended)
    assert latencies and all(status == 200 for status, _ in latencies)
    assert max(took for _, took in latencies) < 5, max(latencies)
    with app.extensions["hourtab.sessionmaker"]() as s:
        # Syncs fall due every few seconds, so the healthy one may have synced again (0 new) by now.
        synced = s.scalars(select(Job).where(Job.kind == "sync_run", Job.status == "done")
                           .order_by(Job.finished_at)).all()
        news = [j.result["new"] for j in synced if j.params["connection_id"] == good]
        assert news[0] == 3 and sum(news) == 3, news
