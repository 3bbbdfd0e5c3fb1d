"""The sync job: one at a time per connection, refused tokens pause, long rate limits defer, failures
keep the schedule; and the transport's rules (origin, redirects, Retry-After dates, bounded waits)."""

from __future__ import annotations

import datetime as dt
import threading
from email.utils import format_datetime

import pytest

from hourtab.core.db import make_sessionmaker, transaction
from hourtab.core.jobrunner import JobRunner
from hourtab.core.jobs import Job, create_job
from hourtab.sync import runner, service
from hourtab.sync.errors import AddressNotAllowed, BadResponse, RateLimited, TrackerUnreachable
from hourtab.sync.models import Connection
from hourtab.sync.reach import Reach
from hourtab.sync.transport import Api
from tests.helpers.fake_trackers import Clockify, Harvest, Kimai, Toggl, serving
from tests.helpers.servers import free_port
from tests.helpers.sync_runs import TOKEN, at, months, run_sync

FAKES = {"toggl": lambda: Toggl(TOKEN), "clockify": lambda: Clockify(TOKEN),
         "harvest": lambda: Harvest(TOKEN), "kimai": lambda: Kimai(TOKEN)}


def _connect(session, account, box, name, fake, url):
    extra = {"harvest_account": fake.account} if name == "harvest" else {}
    with transaction(session):
        return service.connect(session, account, box, name, TOKEN, api_url=url, **extra)


def test_two_syncs_of_one_connection_never_run_at_once(db_session, account, box):
    fake = Toggl(TOKEN)
    fake.add(at(months()[1], 2), 3600, "Work")
    with serving(toggl=fake) as trackers:
        connection = _connect(db_session, account, box, "toggl", fake, trackers.url)
        sessions = make_sessionmaker(db_session.get_bind())
        handler = {"sync_run": lambda s, j: runner.sync_job(s, j, box).as_json()}
        jobs = []
        for _ in range(2):
            with transaction(db_session):
                jobs.append(create_job(db_session, account.id, "sync_run", {"connection_id": connection.id}).id)
        fake.hold.set()
        first = threading.Thread(target=JobRunner(sessions, handler, worker="a").run, args=(jobs[0],))
        first.start()
        assert fake.released.wait(30)                  # the first sync is reading the tracker
        JobRunner(sessions, handler, worker="b").run(jobs[1])
        fake.hold.clear()
        first.join(30)
    db_session.expire_all()
    a, b = (db_session.get(Job, j) for j in jobs)
    assert (a.status, a.result["status"], a.result["new"]) == ("done", "done", 1)
    assert (b.status, b.result["status"]) == ("done", "busy")
    assert db_session.get(Connection, connection.id).lock_job_id is None
    # A lock left by a dead worker (its job's lease ran out) does not block the next sync.
    with transaction(db_session):
        db_session.get(Connection, connection.id).lock_job_id = jobs[1]
    with serving(toggl=fake) as trackers:
        with transaction(db_session):
            db_session.get(Connection, connection.id).api_url = trackers.url
        assert run_sync(db_session, connection.id, box)["status"] == "done"


@pytest.mark.parametrize("name", list(FAKES))
def test_a_refused_token_pauses_the_connection_with_a_clear_message(db_session, account, box, name):
    fake = FAKES[name]()
    with serving(**{name: fake}) as trackers:
        connection = _connect(db_session, account, box, name, fake, trackers.url)
        fake.token = "revoked"
        outcome_job = create_and_run(db_session, box, connection.id)
    assert outcome_job.status == "failed" and "refused the API token (HTTP 40" in outcome_job.error
    db_session.expire_all()
    stored = db_session.get(Connection, connection.id)
    assert stored.status == "paused" and stored.next_sync_at is None and "refused the API token" in stored.pause_reason
    assert service.due(db_session, dt.datetime.now(dt.UTC) + dt.timedelta(days=1)) == []


def create_and_run(session, box, connection_id) -> Job:
    connection = session.get(Connection, connection_id)
    with transaction(session):
        job = create_job(session, connection.account_id, "sync_run", {"connection_id": connection_id})

    def handler(s, j):
        outcome = runner.sync_job(s, j, box)
        if outcome.status in ("failed", "refused"):
            raise BadResponse(outcome.error)
        return outcome.as_json()

    JobRunner(make_sessionmaker(session.get_bind()), {"sync_run": handler}, worker="t").run(job.id)
    session.expire_all()
    return session.get(Job, job.id)


def test_a_long_rate_limit_moves_the_next_sync_instead_of_sleeping(db_session, account, box):
    fake = Harvest(TOKEN)
    with serving(harvest=fake) as trackers:
        connection = _connect(db_session, account, box, "harvest", fake, trackers.url)
        fake.fail(429, {"Retry-After": "3600"}, path="/v2/time_entries")
        started = dt.datetime.now(dt.UTC)
        outcome = run_sync(db_session, connection.id, box)
    assert outcome["status"] == "rate_limited" and "wait 3600 s" in outcome["error"]
    assert (dt.datetime.now(dt.UTC) - started).total_seconds() < 30      # it did not wait an hour
    next_at = db_session.get(Connection, connection.id).next_sync_at
    assert dt.timedelta(minutes=59) < next_at - started < dt.timedelta(minutes=61)


def test_an_unreachable_tracker_is_a_failure_that_keeps_the_schedule(db_session, account, box):
    fake = Kimai(TOKEN)
    with serving(kimai=fake) as trackers:
        connection = _connect(db_session, account, box, "kimai", fake, trackers.url)
    with transaction(db_session):                     # the server is gone: nothing listens there now
        db_session.get(Connection, connection.id).api_url = f"http://127.0.0.1:{free_port()}"
    job = create_and_run(db_session, box, connection.id)
    assert job.status == "failed" and "could not be reached at 127.0.0.1" in job.error
    stored = db_session.get(Connection, connection.id)
    assert stored.status == "active" and stored.next_sync_at is not None and stored.failures == 1


def _api(url: str, waits: list[float]) -> Api:
    return Api(label="Tracker", base_url=url, headers={}, secret=TOKEN, sleep=waits.append,
               reach=Reach(allow_private=True))


def test_transport_rules():
    """Links stay on the API's origin; a rate limit is never slept on (its delay, from an HTTP date or
    seconds, comes back to the caller); a 5xx is retried after a pause; redirects elsewhere are refused."""
    fake = Harvest(TOKEN)
    with serving(harvest=fake) as trackers:
        waits: list[float] = []
        api = _api(trackers.url, waits)
        with pytest.raises(BadResponse, match="another host"):
            api.get("http://127.0.0.2:1/v2/time_entries")
        api.headers = {"Authorization": f"Bearer {TOKEN}", "Harvest-Account-Id": fake.account}
        when = format_datetime(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30), usegmt=True)
        fake.fail(429, {"Retry-After": when}, path="/v2/users/me")
        with pytest.raises(RateLimited) as limited:
            api.get("/v2/users/me")
        assert 25 <= limited.value.retry_after <= 31 and waits == []
        fake.fail(503, path="/v2/users/me")
        assert api.get("/v2/users/me").data["id"] == 1782974
        assert waits == [1.0]                              # a back-off after the 503
        fake.fail(302, {"Location": "http://127.0.0.2/v2/users/me"}, path="/v2/users/me")
        with pytest.raises(AddressNotAllowed, match="^The tracker's address is not allowed.$"):
            api.get("/v2/users/me")
    with pytest.raises(TrackerUnreachable):
        _api(f"http://127.0.0.1:{free_port()}", []).get("/v2/users/me")


def test_toggl_quota_headers_are_honoured():
    """Toggl's quota: a 402 with X-Toggl-Quota-Resets-In, or an answer saying 0 requests remain, ends
    the sync with the delay until the reset (the worker never sleeps on it)."""
    fake = Toggl(TOKEN)
    with serving(toggl=fake) as trackers:
        from hourtab.sync.clients import toggl

        api = toggl.api(trackers.url, TOKEN, "")
        api.reach = Reach(allow_private=True)
        fake.fail(402, {"X-Toggl-Quota-Resets-In": "7"}, path="/api/v9/me")
        with pytest.raises(RateLimited) as limited:
            api.get("/api/v9/me")
        assert limited.value.retry_after == 7
        fake.fail(200, {"X-Toggl-Quota-Remaining": "0", "X-Toggl-Quota-Resets-In": "30"}, path="/api/v9/me")
        api.get("/api/v9/me")
        with pytest.raises(RateLimited) as limited:
            api.get("/api/v9/me")                       # the quota is used up: the sync ends and comes back then
        assert 29 <= limited.value.retry_after <= 30


def test_requests_carry_no_token_in_the_url():
    """The token travels in headers only (never a query string, which proxies and servers log)."""
    fake = Toggl(TOKEN)
    with serving(toggl=fake) as trackers:
        from hourtab.sync.clients import toggl
        api = toggl.api(trackers.url, TOKEN, "")
        api.reach = Reach(allow_private=True)
        assert api.get("/api/v9/me").data["api_token"] == TOKEN      # Toggl echoes it: never stored
        assert fake.requests and all(TOKEN not in r.path + str(r.query) for r in fake.requests)
