"""Toggl Track's detailed report CSV (with or without BOM, Amount column and quoting)."""

from hourtab.timesheets.spec import FormatSpec

TOGGL = FormatSpec(
    name="toggl",
    label="Toggl Track detailed report",
    aliases={
        "user": ("user",), "client": ("client",), "project": ("project",), "task": ("task",),
        "description": ("description",), "billable": ("billable",),
        "start_date": ("start date",), "start_time": ("start time",),
        "end_date": ("end date",), "end_time": ("end time",),
        "duration": ("duration",), "tags": ("tags",),
    },
    required=("start_date", "duration"),
    marks=("user", "email"),
    excludes=("duration (h)", "duration (decimal)"),
    duration_units={"duration": "clock"},
)
