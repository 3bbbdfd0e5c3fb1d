"""Kimai: backfill, increments with edits and deletions, running timers, ``X-Total-Pages`` pages, 429 —
on both databases, with the ledger checked to the second per period in the retainer's zone."""

from __future__ import annotations

import datetime as dt

import pytest

from hourtab.core.db import transaction
from hourtab.sync import service
from hourtab.sync.errors import InvalidConnection
from hourtab.timesheets.zone import tracker_zone
from tests.helpers.fake_trackers import Kimai, parse, serving
from tests.helpers.sync_runs import (
    TOKEN,
    ZONE,
    at,
    by_month,
    ledger_by_period,
    make_retainer,
    months,
    run_sync,
)

CUSTOMER = "Kimai GmbH"


def expected(fake: Kimai) -> dict[dt.date, int]:
    return by_month((parse(e["begin"]).astimezone(ZONE).date(), e["duration"]) for e in fake.entries.values()
                    if e["end"] and e["project"]["customer"]["name"] == CUSTOMER)


def populate(fake: Kimai) -> dict[str, int]:
    previous, current = months()
    ids = {}
    for i in range(70):
        customer = CUSTOMER if i % 3 else "Other customer"
        ids[f"prev{i}"] = fake.add(at(previous + dt.timedelta(days=i % 27), 7 + i // 27), 1200 + 29 * i, f"Task {i}",
                                   customer=customer)
    ids["edge"] = fake.add(at(current - dt.timedelta(days=1), 23, 30), 2700, "Late call")
    for i in range(6):
        ids[f"cur{i}"] = fake.add(at(current, 1 + i % 3, 10 * i), 600 + 61 * i, f"Now {i}")
    ids["running"] = fake.add(at(current, 5), None, "Timer", running=True)
    return ids


def test_kimai_needs_its_url(db_session, account, box):
    with pytest.raises(InvalidConnection, match="self-hosted"):
        service.connect(db_session, account, box, "kimai", TOKEN)


def test_kimai_takes_its_zone_from_the_users_profile(db_session, account, box):
    """The account is in New York; the Kimai user's profile says Tokyo: Kimai reads ``begin``/``end`` and
    writes its exports on Tokyo's clock, so the connection and the remembered tracker zone say Tokyo."""
    fake = Kimai(TOKEN, zone="Asia/Tokyo")
    with serving(kimai=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "kimai", TOKEN, api_url=trackers.url)
    assert (connection.timezone, connection.tracker_user, connection.tracker_user_id) == ("Asia/Tokyo", "Ada L.", "2")
    assert tracker_zone(db_session, account.id, "kimai").timezone == "Asia/Tokyo"


def test_kimai_backfill_increment_running_pages_and_429(db_session, account, box):
    fake = Kimai(TOKEN, max_size=30)
    ids = populate(fake)
    retainer = make_retainer(db_session, account, CUSTOMER)
    previous, current = months()
    with serving(kimai=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "kimai", TOKEN, api_url=trackers.url)
        assert connection.tracker_user == "Ada L."
        fake.fail(429, {"Retry-After": "1"}, path="/api/timesheets")

        assert run_sync(db_session, connection.id, box)["status"] == "rate_limited"   # not slept on
        first = run_sync(db_session, connection.id, box)
        assert (first["new"], first["running"], first["removed"]) == (77, 1, 0)
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert expected(fake)[previous] and expected(fake)[current]
        asked = [r for r in fake.requests if r.path == "/api/timesheets" and "begin" in r.query]
        assert [r.query["page"] for r in asked if r.status == 200] == ["1", "2", "3"]
        assert all(r.query["full"] == "true" for r in asked)

        fake.edit(ids["cur1"], 4000)
        fake.delete(ids["cur2"])
        fake.stop(ids["running"], 1200)
        second = run_sync(db_session, connection.id, box)
        assert not second["full"]
        assert (second["new"], second["changed"], second["removed"], second["running"]) == (1, 1, 1, 0)
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert second["revised_periods"] == []
