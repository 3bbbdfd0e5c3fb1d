"""Time-tracker CSV exports read: Toggl, Clockify, Harvest, Kimai and mapped CSVs, and the entries' tables.

``read_timesheet`` (pure) turns bytes into normalised entries and a report; ``hourtab.imports``
writes them idempotently into ``time_entries`` and keeps the upload for audit.
"""

from hourtab.timesheets.reader import read_timesheet

__all__ = ["read_timesheet"]
