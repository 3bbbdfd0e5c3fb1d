"""Demo data for ``hourtab serve --demo``: two real exports imported into the demo account.

Idempotent (a file already imported for the account is skipped), so other demo loaders that need
entries may call :func:`load_timesheet_demo` first themselves.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import ROOT
from hourtab.accounts import Account
from hourtab.timesheets.importer import import_file
from hourtab.timesheets.models import Upload

DEMO_FILES = (
    # Real Toggl export, anonymised by its author (floresfdev/toggl-dashboard); August 2017.
    ROOT / "tests/data/timetrackers/toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_2017-08-31.csv",
    # Real Clockify shared-report CSV with lorem-ipsum descriptions (damirarh/ClockifyExport); January 2024.
    ROOT / "tests/data/timetrackers/clockify/damirarh_ClockifyExport_shared_report_Clockify.csv",
)


def load_timesheet_demo(session: Session, account: Account) -> None:
    """Import the demo exports (in the caller's transaction); skip those already imported."""
    import hashlib

    for path in DEMO_FILES:
        if not path.is_file():
            continue
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        done = session.scalar(select(Upload.id).where(Upload.account_id == account.id, Upload.sha256 == digest,
                                                      Upload.status == "imported"))
        if done is None:
            import_file(session, account, data, path.name, timezone="UTC", created_by="demo loader")
