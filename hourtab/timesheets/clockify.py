"""Clockify's detailed report CSV and its shared-report CSV.

The detailed report follows each user's profile for dates and times and the workspace's setting
for ``Duration (h)`` (``hh:mm:ss``, ``h:mm`` or decimal), so both are read per file, not assumed.
A detailed report exported without its duration columns still has start and end, which give
the length. The shared report grouped by day (a "summary by day") has only a date and a total.
"""

from hourtab.timesheets.spec import FormatSpec

CLOCKIFY = FormatSpec(
    name="clockify",
    label="Clockify detailed report",
    aliases={
        "project": ("project",), "client": ("client",), "description": ("description",),
        "task": ("task", "activity"), "user": ("user",), "tags": ("tags",), "billable": ("billable",),
        "start_date": ("start date",), "start_time": ("start time",),
        "end_date": ("end date",), "end_time": ("end time",),
        "duration": ("duration (h)", "duration (decimal)"),
    },
    required=("start_date",),
    # "Group" and "Date of creation" are Clockify's own; Toggl's detailed report has neither.
    marks=("duration (h)", "duration (decimal)", "group", "date of creation"),
    excludes=("duration",),
    duration_units={"duration (h)": "auto", "duration (decimal)": "hours"},
)

CLOCKIFY_SHARED = FormatSpec(
    name="clockify-shared",
    label="Clockify shared report",
    aliases={
        "date": ("date",), "project": ("project",), "client": ("client",),
        "description": ("description",), "task": ("task",), "user": ("user",), "tags": ("tags",),
        "duration": ("time (h)", "time (decimal)"),
    },
    required=("date", "duration"),
    marks=("time (h)", "time (decimal)"),
    duration_units={"time (h)": "auto", "time (decimal)": "hours"},
)
