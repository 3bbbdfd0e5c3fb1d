"""Real and hand-made multi-client exports, and what each client's rows are, read with ``csv`` alone.

The expectations are computed from the files with the standard library, not with HourTab's reader,
so a test compares HourTab's routing with an independent reading of the same bytes.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.paths import DATA

CLOCKIFY = DATA / "timetrackers/clockify/metaplm_Clockify_Time_Report_Detailed_01_01_2026-31_12_2026.csv"
TOGGL = DATA / "timetrackers/toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_2017-08-31.csv"
TOGGL13 = DATA / "exports/toggl_thirteen_clients.csv"
KIMAI14 = DATA / "exports/kimai_fourteen_customers.csv"

#: (client, project, description, duration, start date, start time) column names per file.
COLUMNS = {
    CLOCKIFY: ("Client", "Project", "Description", "Duration (h)", "Start Date", "Start Time"),
    TOGGL: ("Client", "Project", "Description", "Duration", "Start date", "Start time"),
    TOGGL13: ("Client", "Project", "Description", "Duration", "Start date", "Start time"),
    KIMAI14: ("Customer", "Project", "Description", "Duration", "Date", "From"),
}


def _seconds(text: str) -> int:
    if ":" not in text:
        return int(text)
    h, m, s = (int(x) for x in text.split(":"))
    return h * 3600 + m * 60 + s


@dataclass
class Rows:
    """One client's rows of a file (or the rows with no client and no project: client ``""``)."""

    count: int = 0
    seconds: int = 0
    projects: set[str] = field(default_factory=set)
    descriptions: set[str] = field(default_factory=set)
    starts: list[tuple[str, str]] = field(default_factory=list)  # (date as written, "HH:MM")


def by_client(path: Path) -> dict[str, Rows]:
    """Rows per client; rows with a project but no client are under ``"(project only)"``."""
    client_col, project_col, desc_col, dur_col, date_col, time_col = COLUMNS[path]
    found: dict[str, Rows] = {}
    for row in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))):
        client = row[client_col].strip()
        key = client or ("(project only)" if row[project_col].strip() else "")
        rows = found.setdefault(key, Rows())
        rows.count += 1
        rows.seconds += _seconds(row[dur_col])
        rows.projects.add(row[project_col])
        rows.descriptions.add(row[desc_col])
        rows.starts.append((row[date_col], row[time_col][:5]))
    return found


def foreign_words(path: Path, mine: set[str]) -> set[str]:
    """Projects and descriptions that only other clients' rows carry (none may reach ``mine``'s pages)."""
    rows = by_client(path)
    own = set().union(*(rows[c].projects | rows[c].descriptions for c in mine if c in rows))
    other = set().union(*(r.projects | r.descriptions for c, r in rows.items() if c not in mine))
    return {w for w in other - own if len(w) > 3}
