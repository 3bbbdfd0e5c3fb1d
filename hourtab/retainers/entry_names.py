"""The exact names an account's entries carry: clients, projects and tags, for rules made of names.

A rule lists names, each one whole ("Panageas, Kathy", "Acme, Inc."): the form offers these as
suggestions, one input per name, and the repair of rules once split on commas looks them up.
Reads name their columns, so the data migration can run this code as well.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.timesheets.models import TimeEntry

#: Rule fields and the entry column each compares with.
FIELDS = {"clients": "client", "projects": "project", "tags": "tags"}
#: Suggestions per field at most (an account has a few dozen clients; this is a bound, not a page).
MAX_NAMES = 500


def split_tags(stored: str | None) -> list[str]:
    """The tags of one entry: the importer stores them joined with ", "."""
    return [t.strip() for t in str(stored or "").split(",") if t.strip()]


def entry_names(session: Session, account_id: int, limit: int | None = MAX_NAMES) -> dict[str, list[str]]:
    """``{"clients": [...], "projects": [...], "tags": [...]}``, each sorted, removed entries included
    (a rule may be written for work that is not counted yet)."""
    out: dict[str, list[str]] = {}
    for field, column in FIELDS.items():
        col = getattr(TimeEntry, column)
        values = session.scalars(select(col).distinct().where(TimeEntry.account_id == account_id, col != ""))
        names = {t for v in values for t in split_tags(v)} if field == "tags" else {v.strip() for v in values if v}
        out[field] = sorted(n for n in names if n)[:limit]
    return out
