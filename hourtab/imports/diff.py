"""What an import will do, row by row: new entries, changed ones (field: old → new), and the
entries it would flag for removal. Shown before confirming and kept with the upload afterwards.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, cast
from zoneinfo import ZoneInfo

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.timesheets.models import TimeEntry
from hourtab.timesheets.normalise import hms

#: Rows listed per kind; the counts are always complete.
MAX_LISTED = 1000
#: Fields compared for "changed", in the order shown, with their labels.
SHOWN_FIELDS = {"local_date": "date", "start_at": "start", "end_at": "end", "duration_s": "duration",
                "client": "client", "project": "project", "task": "task", "description": "description",
                "tags": "tags", "billable": "billable", "user_name": "user"}


def hmm(seconds: int) -> str:
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}"


def _show(field: str, value: Any, zone: ZoneInfo) -> str:
    """One value as the consultant reads it: local times, h:mm:ss, yes/no."""
    if value is None or (not isinstance(value, str | bool) and pd.isna(value)):
        return ""
    if field in ("start_at", "end_at"):
        stamp = pd.Timestamp(value)
        stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp
        return stamp.tz_convert(zone).strftime("%Y-%m-%d %H:%M:%S")
    if field == "local_date":
        return (value.date() if isinstance(value, pd.Timestamp | dt.datetime) else value).isoformat()
    if field == "duration_s":
        return hms(int(value))
    if field == "billable":
        return "yes" if value else "no"
    return str(value)


def _row(values: dict[str, Any], zone: ZoneInfo) -> dict[str, str]:
    # Shown in the zone the row was read in (uploads imported before kept one per retainer zone).
    own = values.get("timezone")
    zone = ZoneInfo(own) if own and own != zone.key else zone
    return {"date": _show("local_date", values["local_date"], zone), "start": _show("start_at", values["start_at"], zone),
            "client": values["client"] or "", "project": values["project"] or "",
            "description": values["description"] or "", "duration": hms(int(values["duration_s"]))}


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The frame's rows as dicts keyed by its column names (all str here; pandas allows any hashable)."""
    return cast(list[dict[str, Any]], frame.to_dict("records"))


def build_diff(session: Session, new: pd.DataFrame, changed_new: pd.DataFrame, changed_ids: list[int],
               removal_ids: list[int], zone_name: str, scope: str) -> dict[str, Any]:
    """The diff as plain JSON: each kind's rows (up to ``MAX_LISTED``) and its full count."""
    zone = ZoneInfo(zone_name)
    new_rows = [{"line": int(r["line"]), **_row(r, zone)} for r in _records(new.head(MAX_LISTED))]
    stored = _entries(session, changed_ids[:MAX_LISTED] + removal_ids[:MAX_LISTED])
    changed = []
    for fresh, entry_id in zip(_records(changed_new.head(MAX_LISTED)), changed_ids, strict=False):
        old = stored[entry_id]
        fields = [{"field": label, "old": _show(f, getattr(old, f), zone), "new": _show(f, fresh[f], zone)}
                  for f, label in SHOWN_FIELDS.items()]
        fields = [f for f in fields if f["old"] != f["new"]]
        if old.status != "active":
            fields.append({"field": "status", "old": old.status, "new": "active"})
        changed.append({"entry_id": entry_id, "line": int(fresh["line"]), **_row(fresh, zone), "changes": fields})
    removal = [{"entry_id": i, **_row({f: getattr(stored[i], f) for f in SHOWN_FIELDS}, zone)}
               for i in removal_ids[:MAX_LISTED]]
    removal_seconds = sum(stored[i].duration_s for i in removal_ids[:MAX_LISTED])
    return {"timezone": zone_name, "zones": shown_zones(zone_name, new, changed_new, len(removal_ids)),
            "scope": scope, "new": new_rows, "new_count": len(new), "new_seconds": int(new["duration_s"].sum()) if len(new) else 0,
            "changed": changed, "changed_count": len(changed_ids),
            "removal": removal, "removal_count": len(removal_ids), "removal_hours": hmm(removal_seconds)}


def shown_zones(zone_name: str, new: pd.DataFrame, changed_new: pd.DataFrame, removals: int
                ) -> list[dict[str, Any]]:
    """The zones the diff's rows are shown in (each read row in its own, removals in the upload's),
    with how many rows each, most first: what the summary line says."""
    counts: dict[str, int] = {}
    for frame in (new, changed_new):
        zones = frame["timezone"] if "timezone" in frame else pd.Series(zone_name, index=frame.index)
        for zone, n in zones.fillna(zone_name).value_counts().items():
            counts[str(zone)] = counts.get(str(zone), 0) + int(n)
    if removals:
        counts[zone_name] = counts.get(zone_name, 0) + removals
    return [{"zone": z, "entries": n} for z, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def _entries(session: Session, ids: list[int]) -> dict[int, TimeEntry]:
    found: dict[int, TimeEntry] = {}
    for i in range(0, len(ids), 1000):
        found.update((e.id, e) for e in session.scalars(select(TimeEntry).where(TimeEntry.id.in_(ids[i:i + 1000]))))
    return found
