"""Which time zone an upload's clock times are read in, and why.

A tracker writes an export's wall-clock times, without an offset, in the *exporting person's*
profile zone: a Berlin consultant's Toggl export for a New York client says 15:00 for 15:00 in
Berlin. So the whole file is read in one zone: the one chosen for the upload, else the zone of the
tracker profile the account's connection to that tracker reported (``TrackerZone``), else the
account's own zone (asked at sign-up). The retainer's zone plays no part in reading: it decides
the periods an instant falls in and the clock the client is shown (``retainers.ledger``).

The reason travels with the zone so the preview can say it, and a warning when the account's zone
is not the tracker profile's (one of the two is then probably wrong).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.db import utcnow
from hourtab.core.scoping import select_owned
from hourtab.timesheets.models import TrackerZone


@dataclass(frozen=True)
class UploadZone:
    name: str
    why: str
    #: Set when the tracker profile's zone is known and is not the account's.
    warning: str = ""


def tracker_zone(session: Session, account_id: int, tracker_format: str | None) -> TrackerZone | None:
    """The profile zone known for the tracker writing ``tracker_format`` exports, if any."""
    if not tracker_format:
        return None
    return session.scalars(select_owned(TrackerZone, account_id)
                           .where(TrackerZone.tracker == tracker_format)).first()


def upload_zone(session: Session, account: Account, requested: str | None = None,
                tracker_format: str | None = None) -> UploadZone:
    """The zone to read an upload in: ``requested``, else the tracker profile's, else the account's."""
    own = account.timezone or "UTC"
    profile = tracker_zone(session, account.id, tracker_format)
    warning = ""
    if profile is not None and profile.timezone != own:
        warning = (f"Your account's time zone ({own}) is not your {profile.label} profile's ({profile.timezone}). "
                   f"{profile.label} writes an export's times in its profile's zone, so HourTab reads them "
                   f"in {requested or profile.timezone}; change your account's zone in Settings if it is wrong.")
    if requested:
        return UploadZone(requested, "chosen for this upload", warning)
    if profile is not None:
        whose = f" ({profile.user_name})" if profile.user_name else ""
        return UploadZone(profile.timezone, f"the zone of your {profile.label} profile{whose}, as your "
                                            f"{profile.label} connection reports it", warning)
    return UploadZone(own, "your account's time zone")


def remember_tracker_zone(session: Session, account_id: int, tracker_format: str, zone: str, label: str,
                          user_name: str = "", now: dt.datetime | None = None) -> TrackerZone:
    """Record (or update) the zone a tracker's profile reported for this account's exports."""
    row = tracker_zone(session, account_id, tracker_format)
    if row is None:
        row = TrackerZone(account_id=account_id, tracker=tracker_format)
        session.add(row)
    row.timezone, row.label, row.user_name = zone, label[:100], user_name[:200]
    row.updated_at = now or utcnow()
    session.flush()
    return row


def forget_tracker_zone(session: Session, account_id: int, tracker_format: str) -> None:
    session.execute(delete(TrackerZone).where(TrackerZone.account_id == account_id,
                                              TrackerZone.tracker == tracker_format))

