"""Kimai API: ``/api/timesheets`` with ``begin``, ``end``, ``page``, ``size`` and ``full=true``.

``full=true`` nests the project (with its customer), the activity and the user, so their names come
with each entry. Pages are counted by the ``X-Total-Pages`` header. Kimai takes ``begin``/``end`` as
local times (``YYYY-MM-DDTHH:MM:SS``) and has no deletion feed, so every sync reads a window, as for
Harvest. A running entry has no ``end``. Authentication is ``Authorization: Bearer`` (API tokens,
Kimai 2); the instance URL is the consultant's own. Who the token belongs to, and the zone of their
profile, come from ``/api/users/me``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hourtab.sync.clients import FetchPlan, Identity, Reading, Tracker, entry_id, parse_time, text
from hourtab.sync.errors import BadResponse
from hourtab.sync.remote_entries import Fetched, RemoteEntry
from hourtab.sync.transport import Api, Reply

LABEL = "Kimai"
SIZE = 500  # the documented maximum
MAX_PAGES = 10_000


def api(base_url: str, token: str, workspace: str) -> Api:
    return Api(label=LABEL, base_url=base_url, secret=token,
               headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})


def _user(value: Any) -> tuple[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        return "", ()
    names = [text(value.get(k)).strip() for k in ("alias", "username") if value.get(k)]
    return (names[0] if names else ""), tuple(names[1:])


def identify(api: Api, workspace: str) -> Identity:
    """Who the token belongs to and the zone of their Kimai profile (``GET /api/users/me``): Kimai reads
    ``begin``/``end`` and writes its exports in that zone, so it is the connection's wall clock too."""
    me = api.get("/api/users/me").data
    me = me if isinstance(me, dict) else {}
    name, _ = _user(me)
    user_id = entry_id(me) or ""
    return Identity(user_id=user_id, user_name=name, timezone=_profile_zone(me) or None, workspaces=[],
                    default_workspace=None)


def _profile_zone(me: dict) -> str:
    """The user's ``timezone`` (Kimai 2 serialises it on the user), else their ``timezone`` preference."""
    if isinstance(me.get("timezone"), str) and me["timezone"].strip():
        return me["timezone"].strip()
    for preference in me.get("preferences") or ():
        if isinstance(preference, dict) and preference.get("name") == "timezone":
            return text(preference.get("value")).strip()
    return ""


def _page(reply: Reply) -> list[dict]:
    if not isinstance(reply.data, list):
        raise BadResponse(f"{LABEL} answered /api/timesheets with something that is not a list.")
    return reply.data


def _name(obj: Any) -> str:
    return text(obj.get("name")) if isinstance(obj, dict) else ""


def _entry(e: dict, fallback_user: str) -> RemoteEntry:
    start, end = parse_time(e.get("begin")), parse_time(e.get("end"))
    project = given if isinstance(given := e.get("project"), dict) else {}
    user, others = _user(e.get("user"))
    duration = e.get("duration")
    if start is None:
        raise ValueError("it has no begin")
    return RemoteEntry(id=text(e["id"]), user=user or fallback_user, other_users=others,
                       start=start, end=end, wall_start=start.replace(tzinfo=None) if start else None,
                       duration_s=int(duration) if end is not None and isinstance(duration, int | float) else None,
                       description=text(e.get("description")), client=_name(project.get("customer")),
                       project=_name(project), task=_name(e.get("activity")),
                       tags=tuple(text(t) for t in e.get("tags") or () if t), billable=e.get("billable"),
                       running=end is None)


def fetch(api: Api, plan: FetchPlan) -> Fetched:
    begin = dt.datetime.combine(plan.first_day - dt.timedelta(days=1), dt.time(0)).strftime("%Y-%m-%dT%H:%M:%S")
    end = dt.datetime.combine(plan.last_day + dt.timedelta(days=2), dt.time(0)).strftime("%Y-%m-%dT%H:%M:%S")
    reading = Reading()
    for page in range(1, MAX_PAGES + 1):
        reply = api.get("/api/timesheets", {"begin": begin, "end": end, "page": page, "size": SIZE, "full": "true"})
        for e in _page(reply):
            reading.add(e, lambda e: _entry(e, plan.user_name), reply)
        pages = text(reply.headers.get("X-Total-Pages")).strip()
        # The header says how many pages there are; without it a short page is the last.
        if not reply.data or (page >= int(pages) if pages.isdigit() else len(reply.data) < SIZE):
            break
    return Fetched(entries=list(reading.entries.values()), window=(plan.first_day, plan.last_day),
                   requests=api.requests_made, unreadable=reading.unreadable)


TRACKER = Tracker(name="kimai", label=LABEL, default_url="", csv_format="kimai", duration_unit="seconds",
                  api=api, identify=identify, fetch=fetch, needs_url=True)
