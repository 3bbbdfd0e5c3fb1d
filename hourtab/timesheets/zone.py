"""Which time zone an upload's times are read in, and why.

Trackers export wall-clock times without an offset. They are read in the zone chosen for the
upload; when none is chosen, in the zone of the retainer the upload is for, else in the account's
default zone, else UTC. The reason travels with the zone so the preview can say it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from hourtab.core.accounts import Account


@dataclass(frozen=True)
class UploadZone:
    name: str
    why: str


def upload_zone(session: Session, account: Account, requested: str | None = None,
                retainer_id: int | None = None) -> UploadZone:
    if requested:
        return UploadZone(requested, "chosen for this upload")
    if retainer_id is not None:
        from hourtab.retainers.models import Retainer  # the retainers package builds on timesheets

        retainer = session.get(Retainer, retainer_id)
        zone = getattr(retainer, "timezone", None) if retainer and retainer.account_id == account.id else None
        if zone:
            return UploadZone(zone, f"the time zone of retainer “{retainer.name}”")
    zone = getattr(account, "timezone", None)
    if zone:
        return UploadZone(zone, "your account's default time zone")
    return UploadZone("UTC", "no time zone is set, so UTC")
