"""Kimai's timesheet CSV export, English or German headers, ``,`` or ``;`` delimited.

``From``/``To`` are times of day on ``Date``; an end earlier than the start crossed midnight.
``Duration`` is ``H:MM``, decimal hours, or (before Kimai 2.28) seconds.
"""

from hourtab.timesheets.spec import FormatSpec

KIMAI = FormatSpec(
    name="kimai",
    label="Kimai export",
    aliases={
        "date": ("date", "datum"),
        "start_time": ("from", "begin", "von", "beginn"),
        "end_time": ("to", "end", "bis", "ende"),
        "duration": ("duration", "dauer"),
        "user": ("user", "benutzer", "name"),
        "client": ("customer", "kunde"),
        "project": ("project", "projekt"),
        "task": ("activity", "tätigkeit", "aktivität"),
        "description": ("description", "beschreibung"),
        "billable": ("billable", "abrechenbar"),
        "tags": ("tags", "schlagworte", "schlagwörter"),
    },
    required=("date", "start_time", "duration"),
    marks=("customer", "kunde", "activity", "tätigkeit", "aktivität"),
    duration_units={"duration": "kimai", "dauer": "kimai"},
)
