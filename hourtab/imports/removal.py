"""Removing entries an export no longer has: reviewed per row, confirmed with the hours, undoable.

An import only *flags* entries it no longer finds (status ``missing_upstream``; they still count).
The consultant picks which of them to remove, sees how many hours that takes away, confirms, and
can restore them afterwards. Every step is kept in ``time_entry_changes``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.db import utcnow
from hourtab.core.scoping import get_owned, select_owned
from hourtab.retainers.assign import entries_changed
from hourtab.retainers.revisions import watch_closed_periods
from hourtab.timesheets.models import TimeEntry, TimeEntryChange, Upload


@dataclass(frozen=True)
class Selection:
    entries: list[TimeEntry]

    @property
    def seconds(self) -> int:
        return sum(e.duration_s for e in self.entries)

    @property
    def hours_text(self) -> str:
        return f"{self.seconds // 3600}:{self.seconds % 3600 // 60:02d}"


def _flagged_by(account_id: int, upload_id: int, kind: str) -> Select[int]:
    return select(TimeEntryChange.entry_id).where(TimeEntryChange.account_id == account_id,
                                                  TimeEntryChange.upload_id == upload_id,
                                                  TimeEntryChange.kind == kind)


def _selected(session: Session, account: Account, status: str, kind: str, upload_id: int | None,
              entry_ids: list[int] | None) -> list[TimeEntry]:
    query = select_owned(TimeEntry, account.id).where(TimeEntry.status == status)
    if entry_ids is not None:
        query = query.where(TimeEntry.id.in_(entry_ids))
    if upload_id is not None:
        get_owned(session, Upload, account.id, upload_id)
        query = query.where(TimeEntry.id.in_(_flagged_by(account.id, upload_id, kind)))
    return list(session.scalars(query.order_by(TimeEntry.local_date, TimeEntry.start_at, TimeEntry.id)))


def removal_candidates(session: Session, account: Account, upload_id: int | None = None,
                       entry_ids: list[int] | None = None) -> Selection:
    """The flagged entries (of one upload, or the listed ones) that removing would take away."""
    return Selection(_selected(session, account, "missing_upstream", "missing_upstream", upload_id, entry_ids))


def confirm_removal(session: Session, account: Account, upload_id: int | None = None,
                    entry_ids: list[int] | None = None) -> int:
    """Mark missing-upstream entries as removed (all, those an upload found, or the listed ids)."""
    entries = removal_candidates(session, account, upload_id, entry_ids).entries
    _set_status(session, account, entries, "removed", upload_id)
    return len(entries)


def removed_entries(session: Session, account: Account, upload_id: int) -> Selection:
    """Entries removed from this upload's review that can still be restored."""
    return Selection(_selected(session, account, "removed", "removed", upload_id, None))


def restore_removed(session: Session, account: Account, upload_id: int, entry_ids: list[int] | None = None) -> int:
    """Undo a removal: the entries go back to the status they had before it."""
    entries = _selected(session, account, "removed", "removed", upload_id, entry_ids)
    _set_status(session, account, entries, None, upload_id)
    return len(entries)


def _set_status(session: Session, account: Account, entries: list[TimeEntry], status: str | None,
                upload_id: int | None) -> None:
    """Change each entry's status and record it; ``None`` restores the status before the last removal.

    Removing or restoring an entry of a closed period revises that period, visibly."""
    if not entries:
        return
    since = min(e.local_date for e in entries) - dt.timedelta(days=1)
    with watch_closed_periods(session, account.id, "removal" if status else "restore", since=since,
                              upload_id=upload_id):
        _write_status(session, account, entries, status, upload_id)


def _write_status(session: Session, account: Account, entries: list[TimeEntry], status: str | None,
                  upload_id: int | None) -> None:
    now = utcnow()
    before: dict[int, str] = {}
    if status is None and entries:
        rows = session.execute(select(TimeEntryChange.entry_id, TimeEntryChange.old_values)
                               .where(TimeEntryChange.entry_id.in_([e.id for e in entries]),
                                      TimeEntryChange.kind == "removed").order_by(TimeEntryChange.id))
        before = {entry_id: (old or {}).get("status", "missing_upstream") for entry_id, old in rows}
    for entry in entries:
        new = status or before.get(entry.id, "missing_upstream")
        session.add(TimeEntryChange(account_id=account.id, entry_id=entry.id, upload_id=upload_id,
                                    kind="removed" if status else "restored", old_values={"status": entry.status},
                                    changed_at=now))
        entry.status = new
        entry.updated_at = now
    session.flush()
    # Removing or restoring changes what retainers hold: the ledger is right in this transaction.
    entries_changed(session, account.id, [e.id for e in entries])
