"""What an import left in the database, to compare before and after."""

from __future__ import annotations

from sqlalchemy import func, select

from hourtab.timesheets.models import TimeEntry, TimeEntryChange, Upload


def snapshot(session):
    """Everything the importer can write, to prove a refused import wrote nothing."""
    entries = session.execute(select(TimeEntry.fingerprint, TimeEntry.duration_s, TimeEntry.status,
                                     TimeEntry.description).order_by(TimeEntry.fingerprint)).all()
    return (entries, session.scalar(select(func.count(Upload.id))),
            session.scalar(select(func.count(TimeEntryChange.id))))
