"""Clockify's detailed report CSV and its shared-report CSV.

The detailed report follows each user's profile for dates and times and the workspace's setting
for ``Duration (h)`` (``hh:mm:ss``, ``h:mm`` or decimal), so both are read per file, not assumed.
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
    required=("start_date", "duration"),
    marks=("duration (h)", "duration (decimal)"),
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
