"""Repair of assignments made before issue 19, run once by migration 0011 (and by its test).

Before, an upload imported "for" a retainer sent every one of its entries there, whatever the
rules said: one client's page listed another's work, and that client was billed for it. This
routes every account's entries by the rules again (``assign.route_entries``) and records each
closed period whose figures that changes as revised (reason ``migration``), so the fix itself is
visible to the clients whose history it corrects.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hourtab.retainers.assign import route_entries
from hourtab.retainers.models import Retainer, retainer_entries
from hourtab.retainers.revisions import watch_closed_periods


def rematch_old_assignments(session: Session, now: dt.datetime | None = None) -> dict[int, int]:
    """Route every account's entries by the rules; ``{account_id: entries moved}`` for those that changed.

    Entries nobody held stay unassigned: the old rule only ever added entries (to a chosen
    retainer), so only held entries can be wrong. Never commits.
    """
    if not session.scalar(select(func.count()).select_from(retainer_entries)):
        return {}
    moved: dict[int, int] = {}
    for account_id in session.scalars(select(Retainer.account_id).distinct().order_by(Retainer.account_id)):
        with watch_closed_periods(session, account_id, "migration", now=now):
            routed = route_entries(session, account_id)
        if routed.moved:
            moved[account_id] = routed.moved
    return moved
