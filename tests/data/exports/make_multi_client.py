"""Writes the two hand-made multi-client exports beside this script (issue 19); rerun to regenerate.

    python tests/data/exports/make_multi_client.py

* ``toggl_thirteen_clients.csv``: Toggl Track detailed-report layout (as the floresfdev sample),
  13 clients with their own projects and descriptions, plus rows with no client and no project
  (a consultant's own admin) and rows with a project but no client. Sept–Oct 2026, one user,
  times of day in the exporter's local time, durations H:MM:SS.
* ``kimai_fourteen_customers.csv``: Kimai timesheet layout (as ``kimai_seconds_with_footer.csv``),
  14 customers, "Magrette" among them, durations in whole seconds, no footer.

Values are invented; a seeded generator keeps the files identical on every run.
"""

from __future__ import annotations

import csv
import datetime as dt
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIENTS = ["Aldercrest", "Brightwater", "Corvid Labs", "Dunmore", "Eastgate", "Fenwick", "Glasshouse", "Harrowgate",
           "Ivybridge", "Juniper Bay", "Kestrel", "Larchfield", "Magrette", "Northwind"]


def _sessions(rng: random.Random, n: int, first: dt.date, days: int):
    """``n`` non-overlapping sessions: (date, start, end) in local wall-clock time."""
    slots: dict[dt.date, int] = {}
    for _ in range(n):
        day = first + dt.timedelta(days=rng.randrange(days))
        begin = slots.get(day, 8 * 60 + rng.randrange(0, 60))
        length = rng.choice([15, 25, 30, 45, 50, 60, 75, 90, 120])
        slots[day] = begin + length + rng.randrange(5, 30)
        start = dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=begin, seconds=rng.randrange(60))
        yield day, start, start + dt.timedelta(minutes=length, seconds=rng.randrange(60))


def toggl(path: Path) -> None:
    rng = random.Random(19)
    clients = CLIENTS[:13]
    header = ["User", "Email", "Client", "Project", "Task", "Description", "Billable", "Start date", "Start time",
              "End date", "End time", "Duration", "Tags", "Amount ()"]
    rows = []
    for day, start, end in _sessions(rng, 260, dt.date(2026, 9, 1), 60):
        pick = rng.random()
        if pick < 0.08:
            client, project, desc = "", "", rng.choice(["Inbox and invoices", "Bookkeeping", "Tool upgrades"])
        elif pick < 0.12:
            client, project, desc = "", "Internal tooling", "Build scripts"
        else:
            client = rng.choice(clients)
            project = f"{client} {rng.choice(['platform', 'audit', 'support'])}"
            desc = f"{rng.choice(['Review', 'Pairing', 'Call', 'Fix', 'Report'])} for {client} #{rng.randrange(1, 40)}"
        seconds = int((end - start).total_seconds())
        rows.append(["Ada", "ada@example.com", client, project, "", desc, "Yes", f"{day}", f"{start:%H:%M:%S}",
                     f"{end:%Y-%m-%d}", f"{end:%H:%M:%S}",
                     f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}", "", ""])
    rows.sort(key=lambda r: (r[7], r[8]))
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def kimai(path: Path) -> None:
    rng = random.Random(14)
    header = ["Date", "From", "To", "Duration", "Rate", "User", "Customer", "Project", "Activity", "Description",
              "Exported", "Tags", "Hourly rate", "Fixed rate"]
    rows = []
    for day, start, end in _sessions(rng, 380, dt.date(2026, 9, 1), 60):
        customer = "Magrette" if rng.random() < 0.4 else rng.choice(CLIENTS)
        seconds = int((end - start).total_seconds()) // 60 * 60
        rows.append([f"{day}", f"{start:%H:%M}", f"{(start + dt.timedelta(seconds=seconds)):%H:%M}", str(seconds),
                     f"{seconds / 3600 * 100:.2f}", "ada", customer, f"{customer} retainer work",
                     rng.choice(["Analysis", "Meeting", "Support"]),
                     f"{rng.choice(['Notes', 'Review', 'Sync', 'Fix'])} {customer} {rng.randrange(1, 60)}",
                     "0", "", "100.00", "0"])
    rows.sort(key=lambda r: (r[0], r[1]))
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


if __name__ == "__main__":
    toggl(HERE / "toggl_thirteen_clients.csv")
    kimai(HERE / "kimai_fourteen_customers.csv")
