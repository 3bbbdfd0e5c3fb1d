"""The zone an export's clock times are read in: chosen, else the tracker profile's, else the account's.

A tracker writes an export's wall-clock times in the exporting person's profile zone. The real
Toggl export below (floresfdev, August 2017, 217 rows) is read against a stand-in of Toggl's API
holding the same entries, as Toggl keeps them (UTC instants) for a user whose profile is in
Europe/Berlin, while the client's retainer is kept in New York and the account's zone was never set
(UTC): the instants stored must be the API's, and what the client sees must be those instants on
New York's clock.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from zoneinfo import ZoneInfo

from sqlalchemy import select

from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.exports import entries_csv
from hourtab.sync import service as sync
from hourtab.sync.clients import parse_time
from hourtab.sync.clients import toggl as toggl_client
from hourtab.sync.reach import Reach
from hourtab.sync.token_box import TokenBox
from hourtab.timesheets.models import TimeEntry, TrackerZone
from hourtab.timesheets.zone import remember_tracker_zone, upload_zone
from tests.factories import make_account
from tests.helpers.fake_trackers import Toggl, serving
from tests.helpers.paths import DATA

FLORES = DATA / "toggl_floresfdev_2017-08.csv"
BERLIN, NEW_YORK = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")
TOKEN = "tok_0a1b2c3d4e5f60718293a4b5c6d7e8f9"


def _retainer(session, account, client: str, zone: str):
    with transaction(session):
        return service.create_retainer(session, account, f"{client} retainer", client, service.parse_terms(
            service.TermsInput(hours="200", start="2017-07-01", timezone=zone)))


def test_chosen_zone_else_tracker_profile_else_account(db_session):
    account = make_account(db_session, "zones@example.com", timezone="Europe/Lisbon")
    retainer = _retainer(db_session, account, "Client 1", "America/New_York")
    own = upload_zone(db_session, account, None, "toggl")
    assert (own.name, own.why, own.warning) == ("Europe/Lisbon", "your account's time zone", "")
    with transaction(db_session):
        remember_tracker_zone(db_session, account.id, "toggl", "Europe/Berlin", "Toggl Track", "Ada")
    profile = upload_zone(db_session, account, None, "toggl")
    assert profile.name == "Europe/Berlin" and "Toggl Track profile (Ada)" in profile.why
    assert "(Europe/Lisbon) is not your Toggl Track profile's (Europe/Berlin)" in profile.warning
    assert upload_zone(db_session, account, None, "clockify").name == "Europe/Lisbon"  # another tracker
    assert upload_zone(db_session, account, "Asia/Tokyo", "toggl").name == "Asia/Tokyo"
    # Choosing a retainer for an upload says where its bare rows count, not whose clock the file has.
    with transaction(db_session):
        result = import_file(db_session, account, FLORES.read_bytes(), FLORES.name, retainer_id=retainer.id)
    assert result.report.timezone == "Europe/Berlin"
    assert {e.timezone for e in db_session.scalars(select(TimeEntry))} == {"Europe/Berlin"}


def _stand_in(rows: list[dict]) -> Toggl:
    """Toggl holding the export's entries: the profile is in Berlin, so each row's clock is Berlin's."""
    fake = Toggl(TOKEN)
    assert fake.me["timezone"] == "Europe/Berlin"
    pairs = sorted({(r["Client"], r["Project"]) for r in rows})
    clients = sorted({c for c, _ in pairs})
    fake.clients = [{**fake.clients[0], "id": 51000001 + i, "name": c} for i, c in enumerate(clients)]
    fake.projects = [{**fake.projects[0], "id": 170000001 + i, "name": p, "client_id": 51000001 + clients.index(c),
                      "cid": 51000001 + clients.index(c)} for i, (c, p) in enumerate(pairs)]
    for r in rows:
        start = dt.datetime.fromisoformat(f"{r['Start date']}T{r['Start time']}").replace(tzinfo=BERLIN)
        h, m, s = (int(x) for x in r["Duration"].split(":"))
        fake.add(start, h * 3600 + m * 60 + s, r["Description"], project=pairs.index((r["Client"], r["Project"])))
    return fake


def _api_entries(url: str) -> list[dict]:
    """The entries as Toggl's API gives them (``GET /me/time_entries``), oldest id first."""
    api = toggl_client.api(url, TOKEN, "")
    api.reach = Reach(allow_private=True)        # the fake tracker listens on loopback
    try:
        data = api.get("/api/v9/me/time_entries", {"start_date": "2017-07-01T00:00:00Z",
                                                   "end_date": "2017-10-01T00:00:00Z"}).data
    finally:
        api.close()
    return sorted(data, key=lambda e: e["id"])


def test_real_export_is_read_at_the_instants_its_trackers_api_gives(db_session):
    account = make_account(db_session, "berlin@example.com", timezone="UTC")   # never set: UTC
    retainer = _retainer(db_session, account, "Client 1", NEW_YORK.key)
    rows = list(csv.DictReader(io.StringIO(FLORES.read_text(encoding="utf-8"))))
    fake = _stand_in(rows)
    box = TokenBox.from_settings("", "a secret key for the tests")
    with serving(toggl=fake) as trackers:
        with transaction(db_session):
            sync.connect(db_session, account, box, "toggl", TOKEN, api_url=trackers.url)
        api = _api_entries(trackers.url)
    assert db_session.scalar(select(TrackerZone.timezone).where(TrackerZone.account_id == account.id)) == BERLIN.key
    with transaction(db_session):
        result = import_file(db_session, account, FLORES.read_bytes(), FLORES.name)
    assert (result.report.timezone, result.new) == (BERLIN.key, 217)
    assert "(UTC) is not your Toggl Track profile's (Europe/Berlin)" in result.report.zone_warning

    stored = db_session.scalars(select(TimeEntry).where(TimeEntry.account_id == account.id)
                                .order_by(TimeEntry.source_line)).all()
    assert [(e.start_at, e.duration_s) for e in stored] == [(parse_time(e["start"]), e["duration"]) for e in api]

    # The client sees the API's instants on New York's clock, each on its New York day.
    mine = {p["id"] for p in fake.projects if p["client_id"] == fake.clients[0]["id"]}
    expected = [(parse_time(e["start"]).astimezone(NEW_YORK), e["duration"]) for e in api if e["project_id"] in mine]
    db_session.expire_all()
    ledger = ledger_reads.retainer_ledger(db_session, retainer, as_of=dt.datetime(2017, 9, 15, tzinfo=dt.UTC))
    shown = [(r["date"], r["start"], int(r["duration_seconds"]))
             for r in csv.DictReader(io.StringIO(entries_csv(ledger)))]
    assert sorted(shown) == sorted((f"{s:%Y-%m-%d}", f"{s:%H:%M}", d) for s, d in expected)
    assert len(shown) == 168
    # Entries started after midnight in Berlin were worked the evening before in New York.
    assert ("2017-08-12", "18:49", 1516) in shown


def test_a_removed_connection_takes_its_profile_zone_along(db_session):
    account = make_account(db_session, "gone@example.com", timezone="Asia/Tokyo")
    box = TokenBox.from_settings("", "a secret key for the tests")
    with serving(toggl=Toggl(TOKEN)) as trackers:
        with transaction(db_session):
            connection = sync.connect(db_session, account, box, "toggl", TOKEN, api_url=trackers.url)
    assert upload_zone(db_session, account, None, "toggl").name == "Europe/Berlin"
    with transaction(db_session):
        sync.remove(db_session, account, connection.id)
    assert upload_zone(db_session, account, None, "toggl").name == "Asia/Tokyo"


def test_migration_copies_the_profile_zone_of_toggl_and_clockify_connections(empty_url):
    from sqlalchemy import bindparam, text

    from app.migrate import upgrade
    from hourtab.core.db import UTCDateTime, make_engine

    upgrade(empty_url, "0018")
    at = bindparam("at", type_=UTCDateTime())
    engine = make_engine(empty_url)
    with engine.begin() as c:
        c.execute(text("INSERT INTO accounts (id, email, password_hash, plan, display_name, contact, timezone, "
                       "created_at, password_changed_at) VALUES (1, 'ada@example.com', '!', 'pro', 'Ada', '', "
                       "'UTC', :at, :at)").bindparams(at), {"at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
        for i, (tracker, zone) in enumerate([("toggl", "Europe/Berlin"), ("toggl", "Asia/Tokyo"),
                                             ("harvest", "UTC")], start=1):
            c.execute(text(
                "INSERT INTO sync_connections (id, account_id, tracker, api_url, workspace, tracker_user_id, "
                "tracker_user, timezone, token_sealed, token_hint, status, pause_reason, choices, cursor, "
                "last_result, last_error, failures, created_at, updated_at) VALUES (:id, 1, :tracker, '', :ws, "
                "'1', 'Ada Lovelace', :zone, :tok, '…', 'active', '', '[]', '{}', '{}', '', 0, :at, :at)")
                .bindparams(at), {"id": i, "tracker": tracker, "ws": str(i), "zone": zone, "tok": b"x",
                                  "at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
    engine.dispose()
    upgrade(empty_url)
    engine = make_engine(empty_url)
    try:
        with engine.connect() as c:
            rows = c.execute(text("SELECT account_id, tracker, timezone, label, user_name FROM tracker_zones")).all()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [(1, "toggl", "Europe/Berlin", "Toggl Track", "Ada Lovelace")]
