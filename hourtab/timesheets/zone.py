"""Which time zone an upload's times are read in, and why.

Trackers export wall-clock times without an offset. They are read in the zone chosen for the
upload; when none is chosen, in the zone of the retainer the upload is for, else in the account's
default zone, else UTC. The reason travels with the zone so the preview can say it.

Without a chosen zone or retainer that is only the fallback: each row is then read in the zone of
the retainer its rules match (``hourtab.retainers.routing.read_in_row_zones``), and rows that
match none in this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from hourtab.core.accounts import Account


@dataclass(frozen=True)
class UploadZone:
    name: str
    why: str
    #: Chosen for the whole upload (a zone, or a retainer's), so no row is read in another.
    chosen: bool = False


def upload_zone(session: Session, account: Account, requested: str | None = None,
                retainer_id: int | None = None) -> UploadZone:
    if requested:
        return UploadZone(requested, "chosen for this upload", chosen=True)
    if retainer_id is not None:
        from hourtab.retainers.models import Retainer  # the retainers package builds on timesheets

        retainer = session.get(Retainer, retainer_id)
        zone = getattr(retainer, "timezone", None) if retainer and retainer.account_id == account.id else None
        if zone:
            return UploadZone(zone, f"the time zone of retainer “{retainer.name}”", chosen=True)
    zone = getattr(account, "timezone", None)
    if zone:
        return UploadZone(zone, "your account's default time zone")
    return UploadZone("UTC", "no time zone is set, so UTC")
