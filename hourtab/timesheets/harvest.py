"""Harvest's detailed time report CSV: one row per entry, hours only (no start or end times).

``Hours`` is the tracked time; ``Hours Rounded`` (when the account rounds) is ignored on purpose,
because rounding is a retainer term applied later, not a fact about the work.
"""

from hourtab.timesheets.spec import FormatSpec

HARVEST = FormatSpec(
    name="harvest",
    label="Harvest detailed time report",
    aliases={
        "date": ("date", "spent date"), "client": ("client",), "project": ("project",), "task": ("task",),
        "description": ("notes",), "duration": ("hours",), "billable": ("billable?", "billable"),
        "first_name": ("first name",), "last_name": ("last name",),
    },
    required=("date", "duration"),
    marks=("notes", "project code", "billable?", "first name", "hours rounded"),
    duration_units={"hours": "hours"},
)
