"""The web tier and a misbehaving tracker: "Connect" answers within its check's few seconds, a refused
address says only that it is not allowed, and ``/healthz`` shows a consumer busy past its budget."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from sqlalchemy import func, select

from hourtab.core.db import transaction, utcnow
from hourtab.core.jobs import Job, create_job
from hourtab.sync.models import Connection
from tests.helpers.fake_trackers import Clockify, serving
from tests.helpers.forms import post_form
from tests.helpers.sync_runs import TOKEN


@pytest.fixture
def app(make_app):
    return make_app(HOURTAB_SYNC_CHECK_S="3", HOURTAB_SYNC_BUDGET_S="30", HOURTAB_SYNC_REQUEST_S="10")


def _connections(app) -> int:
    with app.extensions["hourtab.sessionmaker"]() as s:
        return s.scalar(select(func.count()).select_from(Connection))


def test_connect_answers_within_the_check_deadline_and_refuses_what_it_may_not_reach(app, logged_in):
    fake = Clockify(TOKEN)
    fake.drip_s = 0.05                     # its /user answer would take a minute and a half
    with serving(clockify=fake) as trackers:
        started = time.monotonic()
        r = post_form(logged_in, "/account/connections", {"tracker": "clockify", "token": TOKEN,
                                                          "api_url": trackers.url})
        took = time.monotonic() - started
    assert r.status_code == 502 and "did not answer the token check within 3 s" in r.get_data(as_text=True)
    assert took < 20 and _connections(app) == 0        # cut at 3 s, not after its minute and a half
    # A metadata address is refused before anything is sent, saying only that.
    r = post_form(logged_in, "/account/connections", {"tracker": "kimai", "token": TOKEN,
                                                      "api_url": "http://169.254.169.254:80"})
    assert r.status_code == 400 and "The tracker&#39;s address is not allowed." in r.get_data(as_text=True)
    assert _connections(app) == 0


def test_healthz_shows_a_consumer_busy_past_its_budget(app, client):
    assert client.get("/healthz").get_json()["status"] == "ok"
    kinds = app.extensions["hourtab.queue"].kinds
    assert kinds["sync_run"].budget_s < kinds["sync_run"].time_limit_s
    with app.extensions["hourtab.sessionmaker"]() as s, transaction(s):
        from hourtab.core.accounts import create_account

        account = create_account(s, "busy@example.com", "a long enough password")
        job = create_job(s, account.id, "sync_run", {"connection_id": 1})
        job.status, job.started_at = "running", utcnow() - dt.timedelta(seconds=kinds["sync_run"].budget_s + 5)
        job.lease_until = utcnow() + dt.timedelta(seconds=60)
    health = client.get("/healthz").get_json()
    assert health["status"] == "degraded"
    [busy] = health["queue"]["busy_past_budget"]
    assert busy["kind"] == "sync_run" and busy["running_s"] > kinds["sync_run"].budget_s
    with app.extensions["hourtab.sessionmaker"]() as s, transaction(s):
        s.get(Job, job.id).status = "done"
    assert client.get("/healthz").get_json()["status"] == "ok"


def test_entries_that_cannot_be_read_are_listed_on_the_connections_page(app, logged_in):
    from tests.helpers.fake_trackers import Toggl
    from tests.helpers.sync_runs import at, months

    fake = Toggl(TOKEN)
    fake.add(at(months()[1], 9), 1800, "Readable")
    fake.raw_rows = [f'{{"id": 77, "workspace_id": {fake.workspace}, "start": "garbage", "duration": 60}}']
    with serving(toggl=fake) as trackers:
        r = post_form(logged_in, "/account/connections", {"tracker": "toggl", "token": TOKEN, "api_url": trackers.url})
        assert r.status_code == 302                         # connected; the first sync ran (inline queue)
    page = logged_in.get("/account/connections").get_data(as_text=True)
    assert "1 entry could not be read and was skipped (the rest synced)" in page
    assert "entry 77: &#39;garbage&#39; is not a time" in page and "1 new" in page


def test_the_answer_depth_cap_is_a_setting():
    """``HOURTAB_SYNC_ANSWER_DEPTH`` bounds an answer's nesting: a value 9 levels deep is read under the
    default (32) and cut under 4; a cap that is no positive number is refused."""
    from app.config import from_environment
    from app.extensions import sync_limits
    from hourtab.core.errors import InvalidInput
    from hourtab.sync.clients import toggl
    from hourtab.sync.limits import Budget
    from hourtab.sync.reach import Reach
    from tests.helpers.fake_trackers import Toggl

    with pytest.raises(InvalidInput, match="HOURTAB_SYNC_ANSWER_DEPTH"):
        from_environment({"HOURTAB_SYNC_ANSWER_DEPTH": "0"})
    fake = Toggl(TOKEN)
    fake.raw_rows = [f'{{"id": 5, "workspace_id": {fake.workspace}, "tags": [[[[[[["deep"]]]]]]]}}']
    cuts = {}
    with serving(toggl=fake) as trackers:
        for depth in ("", "4"):
            limits = sync_limits(from_environment({"HOURTAB_SYNC_ANSWER_DEPTH": depth} if depth else {}))
            api = toggl.api(trackers.url, TOKEN, "")
            api.reach, api.limits, api.budget = Reach(allow_private=True), limits, Budget(limits)
            window = "start_date=2026-01-01&end_date=2026-02-01"
            cuts[limits.max_depth] = api.get(f"/api/v9/me/time_entries?{window}").cut
    assert cuts == {32: False, 4: True}
