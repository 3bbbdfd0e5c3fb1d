"""Time-tracker CSV import: Toggl, Clockify, Harvest, Kimai and mapped CSVs.

``read_timesheet`` (pure) turns bytes into normalised entries and a report; ``importer.import_file``
writes them idempotently into ``time_entries`` and keeps the upload for audit.
"""

from hourtab.timesheets.reader import read_timesheet

__all__ = ["read_timesheet"]
