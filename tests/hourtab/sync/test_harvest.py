"""Harvest: backfill, increments with edits and deletions (no deletion feed: the window is re-read),
running timers, ``links.next`` pages, 429 — on both databases, ledger checked per period to the second."""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import update

from hourtab.core.db import transaction
from hourtab.sync import service
from hourtab.sync.models import Connection
from tests.helpers.fake_trackers import Harvest, serving
from tests.helpers.sync_runs import TOKEN, by_month, ledger_by_period, make_retainer, months, run_sync

CLIENT = "ABC Corp"


def seconds(hours: float) -> int:
    """Decimal hours as Harvest writes them, in seconds rounded half up (as its CSV's are read)."""
    return int((Decimal(repr(hours)) * 3600).quantize(Decimal(1), ROUND_HALF_UP))


def expected(fake: Harvest) -> dict[dt.date, int]:
    return by_month((dt.date.fromisoformat(e["spent_date"]), seconds(e["hours"])) for e in fake.entries.values()
                    if not e["is_running"] and e["client"]["name"] == CLIENT)


def populate(fake: Harvest) -> dict[str, int]:
    previous, current = months()
    ids = {}
    for i in range(110):
        client = CLIENT if i % 4 else "Other Inc"
        ids[f"prev{i}"] = fake.add(previous + dt.timedelta(days=i % 27), round(0.25 + 0.07 * i, 2), f"Task {i}",
                                   client=client)
    for i in range(6):
        ids[f"cur{i}"] = fake.add(current, round(0.5 + 0.33 * i, 2), f"Now {i}")
    ids["running"] = fake.add(current, 1.17, "Timer", running=True)
    return ids


def test_harvest_backfill_increment_running_pages_and_429(db_session, account, box):
    fake = Harvest(TOKEN, max_per_page=50)
    ids = populate(fake)
    retainer = make_retainer(db_session, account, CLIENT)
    previous, current = months()
    with serving(harvest=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "harvest", TOKEN, api_url=trackers.url,
                                         harvest_account=fake.account)
        assert (connection.workspace, connection.tracker_user, connection.timezone) == \
            ("1234567", "Bob Powell", "America/New_York")      # Harvest's zone is not IANA: the account's
        fake.fail(429, {"Retry-After": "1"}, path="/v2/time_entries")

        assert run_sync(db_session, connection.id, box)["status"] == "rate_limited"   # not slept on
        first = run_sync(db_session, connection.id, box)
        assert (first["new"], first["running"], first["removed"]) == (116, 1, 0)
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert expected(fake)[previous] and expected(fake)[current]
        asked = [r for r in fake.requests if r.path == "/v2/time_entries"]
        assert [r.query["page"] for r in asked if r.status == 200] == ["1", "2", "3"]   # links.next followed

        fake.edit(ids["cur1"], 2.5)
        fake.delete(ids["cur2"])
        fake.stop(ids["running"], 0.75)
        fake.edit(ids["prev1"], 3.0)       # outside the window: comes back through updated_since
        before = ledger_by_period(db_session, retainer)[previous]
        second = run_sync(db_session, connection.id, box)
        assert not second["full"]
        assert (second["new"], second["changed"], second["removed"], second["running"]) == (1, 2, 1, 0)
        assert any("updated_since" in r.query for r in fake.requests[-2:])
        assert ledger_by_period(db_session, retainer) == expected(fake)
        assert second["revised_periods"] == [{"retainer_id": retainer.id, "period_start": previous.isoformat(),
                                              "was_s": before, "now_s": before - seconds(0.32) + seconds(3.0)}]

        fake.delete(ids["prev2"])           # a deletion in the closed month: no feed tells us
        assert run_sync(db_session, connection.id, box)["removed"] == 0
        with transaction(db_session):
            db_session.execute(update(Connection).where(Connection.id == connection.id).values(
                cursor={**connection.cursor, "full_at": "2000-01-01T00:00:00+00:00"}))
        full = run_sync(db_session, connection.id, box)
        assert full["full"] and full["removed"] == 1 and len(full["revised_periods"]) == 1
        assert ledger_by_period(db_session, retainer) == expected(fake)
