"""What an export covers, so that only entries it *should* contain can be missing from it.

An entry is a removal candidate only when the new export covers it: the same tracker, the same
user where the export names users, a date inside the export's range, and a client and project
among those the export contains. A Toggl export filtered to one client therefore proposes no
removals for another client's entries. The price is that an entry whose client or project has
vanished from the export entirely is not proposed either; that errs on the side of keeping hours.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.timesheets.models import TimeEntry


@dataclass(frozen=True)
class Coverage:
    format: str
    first: pd.Timestamp
    last: pd.Timestamp
    users: frozenset[str] | None      # None: the export names no users, so any user is covered
    clients: frozenset[str] | None    # None: the export has no client column (or it is empty)
    projects: frozenset[str] | None

    def describe(self) -> str:
        parts = [f"{self.format} entries from {self.first.date()} to {self.last.date()}"]
        for label, values in (("user", self.users), ("client", self.clients), ("project", self.projects)):
            if values is not None:
                shown = ", ".join(sorted(v or "(none)" for v in values)[:5])
                parts.append(f"{label}{'s' if len(values) != 1 else ''} {shown}{' …' if len(values) > 5 else ''}")
        return "; ".join(parts)


def _names(values: pd.Series, fold: bool = False) -> frozenset[str] | None:
    names = values.fillna("").astype(str).str.strip()
    if fold:
        names = names.str.lower()
    found = frozenset(names.unique().tolist())
    return None if found <= {""} else found


def coverage_of(frame: pd.DataFrame, fmt: str) -> Coverage:
    return Coverage(format=fmt, first=frame["local_date"].min(), last=frame["local_date"].max(),
                    users=_names(frame["user_name"], fold=True), clients=_names(frame["client"]),
                    projects=_names(frame["project"]))


def covered_ids(session: Session, account_id: int, ids: list[int], coverage: Coverage) -> set[int]:
    """Of the stored entries ``ids`` (already of the right tracker and dates), those the export covers."""
    found: set[int] = set()
    for i in range(0, len(ids), 1000):
        query = select(TimeEntry.id, TimeEntry.user_name, TimeEntry.client, TimeEntry.project).where(
            TimeEntry.account_id == account_id, TimeEntry.id.in_(ids[i:i + 1000]))
        for entry_id, user, client, project in session.execute(query):
            if coverage.users is not None and (user or "").strip().lower() not in coverage.users:
                continue
            if coverage.clients is not None and (client or "").strip() not in coverage.clients:
                continue
            if coverage.projects is not None and (project or "").strip() not in coverage.projects:
                continue
            found.add(entry_id)
    return found
