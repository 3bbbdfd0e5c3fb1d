"""A real Toggl export whose clients are written "Last, First" (Jessica Lavery's, 2019-03 to 2020-03)."""

from __future__ import annotations

import csv
import datetime as dt

from tests.helpers.paths import DATA

LAVERY = DATA / "timetrackers/toggl/jalavery_timetrackR_Toggl_time_entries_2019-03-02_to_2020-03-01.csv"
KATHY, SEAN = "Panageas, Kathy", "Devlin, Sean"
#: Rows of each client in the export (counted independently with the csv module in test_samples' way).
ROWS = {KATHY: 78, SEAN: 37}
NOW = dt.datetime(2020, 3, 10, 12, tzinfo=dt.UTC)  # March 2020 open; Mar 2019 to Feb 2020 closed
#: The export's header line and its rows, as the file has them (line ends kept).
HEADER, *LINES = LAVERY.read_bytes().decode().splitlines(keepends=True)


def row_key(row: str) -> tuple[str, ...]:
    """(client, project, description, start date, duration) of an export row."""
    f = next(csv.reader([row]))
    return f[2], f[3], f[5], f[7], f[11]


def alone_on_its_day(month: str) -> str:
    """The first Kathy row of ``month`` alone on its day, of a project other rows have too.

    This export starts every entry at 09:00, so an entry's identity is its day and its place among
    that day's rows: a re-export lacking a row of a busy day would pair the rest with the wrong
    entries. A row alone on its day keeps every other row's identity, and its project keeps a
    re-export covering it.
    """
    days = [row_key(r)[3] for r in LINES]
    projects = [row_key(r)[1] for r in LINES]
    return next(r for r in LINES if row_key(r)[0] == KATHY and row_key(r)[3].startswith(month)
                and days.count(row_key(r)[3]) == 1 and projects.count(row_key(r)[1]) > 1)
