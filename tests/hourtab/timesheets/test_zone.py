"""The zone an upload's times are read in: chosen, else the retainer's, else the account's."""

from __future__ import annotations

from hourtab.core.db import transaction
from hourtab.retainers import service
from hourtab.timesheets.importer import import_file
from hourtab.timesheets.zone import upload_zone
from tests.conftest import DATA

ISTANBUL = (DATA / "exports/toggl_istanbul_month_end.csv").read_bytes()


def test_retainer_zone_then_account_zone_then_choice(db_session, account):
    with transaction(db_session):
        retainer = service.create_retainer(db_session, account, "Baykar", "Baykar", service.parse_terms(
            service.TermsInput(hours="20", start="2024-01-01", timezone="Europe/Istanbul")))
        account.timezone = "Europe/Berlin"
    assert upload_zone(db_session, account, None, retainer.id).name == "Europe/Istanbul"
    assert upload_zone(db_session, account, None, None).why == "your account's default time zone"
    assert upload_zone(db_session, account, "Asia/Tokyo", retainer.id).name == "Asia/Tokyo"
    with transaction(db_session):
        result = import_file(db_session, account, ISTANBUL, "istanbul.csv", retainer_id=retainer.id)
    assert result.report.timezone == "Europe/Istanbul"
    assert result.report.timezone_why == "the time zone of retainer “Baykar”"
