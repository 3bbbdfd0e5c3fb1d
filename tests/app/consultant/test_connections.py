"""Settings → Connections over the app: connect (workspace choice), Sync now, a refused token shown and
e-mailed, pause, resume, remove; the schedule queues one sync per due connection, never two at once."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from sqlalchemy import func, select, update

from hourtab.core.db import transaction
from hourtab.core.jobs import Job
from hourtab.sync.models import Connection, SyncedEntry
from tests.helpers.fake_trackers import Clockify, Toggl, serving
from tests.helpers.forms import csrf_token, post_form
from tests.helpers.mail import PUBLIC_URL
from tests.helpers.servers import free_port
from tests.helpers.sync_runs import TOKEN, at, months


@pytest.fixture
def app(make_app, smtp):
    return make_app(HOURTAB_SMTP_URL=smtp[1], HOURTAB_PUBLIC_URL=PUBLIC_URL, HOURTAB_SYNC_MINUTES="5")


def toggl_with_entries() -> Toggl:
    fake = Toggl(TOKEN)
    previous, current = months()
    for i in range(4):
        fake.add(at(current, 1 + i), 1800, f"Entry {i}")
    fake.add(at(current, 6), None, "Timer", running=True)
    return fake


def session_of(app):
    return app.extensions["hourtab.sessionmaker"]()


def connect(client, url: str, **fields):
    return post_form(client, "/account/connections", {"tracker": "toggl", "token": TOKEN, "api_url": url, **fields})


def test_connect_sync_now_refused_token_pause_resume_remove(app, logged_in, smtp):
    sink, _ = smtp
    fake = toggl_with_entries()
    with serving(toggl=fake) as trackers:
        r = post_form(logged_in, "/account/connections", {"tracker": "toggl", "token": "wrong-token-123456",
                                                          "api_url": trackers.url})
        assert r.status_code == 401 and "Toggl Track refused the API token (HTTP 403)" in r.get_data(as_text=True)
        assert logged_in.get("/account/connections").get_data(as_text=True).count('class="connection"') == 0

        r = connect(logged_in, trackers.url)
        assert r.status_code == 302 and "/jobs/" in r.headers["Location"]
        done = logged_in.get(r.headers["Location"])       # the queue ran it inline: the job page sends us on
        assert done.status_code == 302 and done.headers["Location"].endswith("/account/connections")
        page = logged_in.get("/account/connections").get_data(as_text=True)
        assert "4 new, 0 changed, 0 removed, 0 unchanged" in page and "1 running timer not counted yet" in page
        assert "token …b1a0" in page and TOKEN[:-4] not in page
        with session_of(app) as s:     # new hours: the alert check the sync created was queued and ran
            assert s.scalars(select(Job.status).where(Job.kind == "alerts_check")).all() == ["done"]
        connection_id = int(re.search(r'id="connection-(\d+)"', page).group(1))

        fake.add(at(months()[1], 7), 600, "One more")
        r = post_form(logged_in, f"/account/connections/{connection_id}/sync", {}, page="/account/connections")
        assert r.status_code == 302
        assert "1 new, 0 changed, 0 removed" in logged_in.get("/account/connections").get_data(as_text=True)

        fake.token = "rotated-upstream-000000"           # the consultant revoked the token in Toggl
        post_form(logged_in, f"/account/connections/{connection_id}/sync", {}, page="/account/connections")
        page = logged_in.get("/account/connections").get_data(as_text=True)
        assert "Paused: Toggl Track refused the API token (HTTP 403)" in page
        ((_, mail),) = sink.messages
        assert mail["To"] == "consultant@example.com" and "paused your Toggl Track connection" in mail["Subject"]
        assert "https://hours.example.com/account/connections" in mail.get_content()
        with session_of(app) as s:
            assert s.get(Connection, connection_id).next_sync_at is None     # off the schedule

        r = post_form(logged_in, f"/account/connections/{connection_id}/resume", {"token": fake.token},
                      page="/account/connections")
        assert r.status_code == 302
        page = logged_in.get("/account/connections").get_data(as_text=True)
        assert "Paused" not in page and "token …0000" in page and "0 new, 0 changed" in page

        post_form(logged_in, f"/account/connections/{connection_id}/pause", {}, page="/account/connections")
        assert "Paused: Paused by you." in logged_in.get("/account/connections").get_data(as_text=True)
        r = post_form(logged_in, f"/account/connections/{connection_id}/remove", {}, page="/account/connections")
        assert "token deleted; the entries it synced stay" in logged_in.get(r.headers["Location"]).get_data(as_text=True)
    with session_of(app) as s:
        assert s.scalar(select(func.count()).select_from(Connection)) == 0
        assert s.scalar(select(func.count()).select_from(SyncedEntry)) == 0
        from hourtab.timesheets.models import TimeEntry
        assert s.scalar(select(func.count(TimeEntry.id)).where(TimeEntry.status == "active")) == 5


def test_choose_a_workspace_on_the_page(app, logged_in):
    fake = Clockify(TOKEN, workspaces=2)
    fake.add(at(months()[1], 2), 3600, "Work")
    with serving(clockify=fake) as trackers:
        r = connect(logged_in, trackers.url, tracker="clockify")
        page = logged_in.get(r.headers["Location"]).get_data(as_text=True)
        assert "reaches several workspaces" in page and "65b9e1f9c1a2b3c4d5e6f708" in page
        connection_id = int(re.search(r'id="connection-(\d+)"', page).group(1))
        r = post_form(logged_in, f"/account/connections/{connection_id}/workspace",
                      {"workspace": "64a687e29ae1f428e7ebe303"}, page="/account/connections")
        assert r.status_code == 302
        page = logged_in.get("/account/connections").get_data(as_text=True)
        assert "workspace 64a687e29ae1f428e7ebe303" in page and "1 new" in page


def test_the_schedule_queues_each_due_connection_once_with_jitter(app, logged_in):
    from app.jobs.sync import queue_due_syncs

    fake = toggl_with_entries()
    with serving(toggl=fake) as trackers:
        connect(logged_in, trackers.url)
        with session_of(app) as s:
            connection = s.scalar(select(Connection))
            first_jobs = s.scalar(select(func.count(Job.id)).where(Job.kind == "sync_run"))
        now = dt.datetime.now(dt.UTC)
        assert queue_due_syncs(app, now) == 0                       # synced at connect: not due yet
        with session_of(app) as s, transaction(s):
            s.execute(update(Connection).values(next_sync_at=now - dt.timedelta(minutes=1)))
        assert queue_due_syncs(app, now) == 1
        assert queue_due_syncs(app, now) == 0                       # moved forward: nobody queues it twice
        with session_of(app) as s:
            next_at = s.get(Connection, connection.id).next_sync_at
            jobs = s.scalars(select(Job).where(Job.kind == "sync_run").order_by(Job.created_at)).all()
        assert len(jobs) == first_jobs + 1 and jobs[-1].status == "done"
        assert jobs[-1].phase.startswith("Saving") and jobs[-1].total == 2     # a job with progress
        # HOURTAB_SYNC_MINUTES=5, ±20 %: the run that just finished set the next one.
        assert dt.timedelta(minutes=4) <= next_at - now <= dt.timedelta(minutes=6, seconds=30)
        # A week on, done sync jobs are dropped by the schedule (the connection keeps the last result).
        app.extensions["hourtab.sync_pruned"] = 0.0
        assert queue_due_syncs(app, now + dt.timedelta(days=8)) == 1      # (and it is due again by then)
        with session_of(app) as s:
            left = s.scalars(select(Job.id).where(Job.kind == "sync_run")).all()
            assert len(left) == 1 and not set(left) & {j.id for j in jobs}
            assert s.get(Connection, connection.id).last_result["new"] == 0


def test_sync_now_while_one_is_queued_queues_nothing_more(make_app, tmp_path, logged_in):
    from app.jobs.sync import queue_sync

    queued = make_app(HOURTAB_DATA_DIR=str(tmp_path / "q"), QUEUE_IMMEDIATE=False)
    fake = toggl_with_entries()
    with serving(toggl=fake) as trackers:
        connect(logged_in, trackers.url)
    with queued.app_context(), session_of(queued) as s:
        connection = s.scalar(select(Connection))
        with transaction(s):
            s.execute(update(Connection).values(last_job_id=None))
        first = queue_sync(queued, s, s.get(Connection, connection.id), "now")
        again = queue_sync(queued, s, s.get(Connection, connection.id), "now")
        assert first.id == again.id and first.status == "queued"


def test_an_unreachable_tracker_is_a_bad_gateway_with_the_reason(logged_in):
    r = connect(logged_in, f"http://127.0.0.1:{free_port()}")
    assert r.status_code == 502
    assert "Toggl Track could not be reached at 127.0.0.1" in r.get_data(as_text=True)


def test_the_page_needs_a_login_and_csrf(client, logged_in):
    anonymous = client.application.test_client()
    assert anonymous.get("/account/connections").status_code in (302, 401)
    assert logged_in.post("/account/connections", data={"tracker": "toggl", "token": TOKEN}).status_code == 400
    assert csrf_token(logged_in, "/account/connections")
