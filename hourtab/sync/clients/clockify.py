"""Clockify API v1: ``/user`` and ``/workspaces/{ws}/user/{user}/time-entries``.

Entries are read by ``start``/``end`` with ``page``/``page-size`` and ``hydrated=true`` (project,
client, task and tag names inline). The API has no deletion feed, so every sync reads a window and a
known entry inside it that is no longer listed was deleted. An entry without an end is running.
Authentication is the ``X-Api-Key`` header; regional hosts are chosen with the API URL.
"""

from __future__ import annotations

import re
from typing import Any

from hourtab.sync.clients import (
    FetchPlan,
    Identity,
    Reading,
    Tracker,
    day_start_utc,
    parse_time,
    text,
    wall_clock,
)
from hourtab.sync.errors import BadResponse
from hourtab.sync.remote_entries import Fetched, RemoteEntry
from hourtab.sync.transport import Api

LABEL = "Clockify"
PAGE_SIZE = 200
MAX_PAGES = 10_000
#: The global API host and the regional ones (EU, USA, UK, Australia), where an account's data may live.
HOSTS = ("api.clockify.me", "euc1.clockify.me", "use2.clockify.me", "euw2.clockify.me", "apse2.clockify.me")
_ISO_DURATION = re.compile(r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$")


def api(base_url: str, token: str, workspace: str) -> Api:
    return Api(label=LABEL, base_url=base_url, headers={"X-Api-Key": token, "Accept": "application/json"},
               secret=token)


def identify(api: Api, workspace: str) -> Identity:
    # Memberships are listed only when asked for: without them a token reaching several workspaces
    # would look like one reaching its default workspace alone.
    user = api.get("/api/v1/user", {"include-memberships": "true"}).data
    if not isinstance(user, dict) or "id" not in user:
        raise BadResponse(f"{LABEL} answered /user without a user id.")
    spaces = [text(m.get("targetId")) for m in user.get("memberships") or ()
              if isinstance(m, dict) and m.get("membershipType", "WORKSPACE") == "WORKSPACE" and m.get("targetId")]
    default = text(user.get("defaultWorkspace") or user.get("activeWorkspace")) or None
    if default and default not in spaces:
        spaces.insert(0, default)
    labels = [(w, f"{w} (default)" if w == default else w) for w in dict.fromkeys(spaces)]
    settings = given if isinstance(given := user.get("settings"), dict) else {}
    return Identity(user_id=text(user["id"]), user_name=text(user.get("name") or user.get("email")),
                    timezone=settings.get("timeZone") or None, workspaces=labels, default_workspace=default)


def iso_duration_seconds(value: str | None) -> int | None:
    """``PT1H30M`` (ISO 8601, as Clockify writes ``timeInterval.duration``) in whole seconds."""
    m = _ISO_DURATION.match((value or "").strip())
    if not m or not any(m.groupdict().values()):
        return None
    parts = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
    return round(parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"])


def _name(obj: Any) -> str:
    return text(obj.get("name")) if isinstance(obj, dict) else ""


def _entry(e: dict, plan: FetchPlan) -> RemoteEntry:
    interval = e.get("timeInterval") or {}
    if not isinstance(interval, dict):
        raise ValueError("its timeInterval is not an object")
    start, end = parse_time(interval.get("start")), parse_time(interval.get("end"))
    running = end is None
    seconds = None
    if end is not None:
        seconds = iso_duration_seconds(interval.get("duration"))
        if seconds is None and start is not None:
            seconds = int((end - start).total_seconds())
    project = given if isinstance(given := e.get("project"), dict) else {}
    if start is None:
        raise ValueError("it has no start")
    return RemoteEntry(id=text(e["id"]), user=plan.user_name, start=start, end=end, duration_s=seconds,
                       wall_start=wall_clock(start, plan.zone),
                       description=text(e.get("description")),
                       client=text(project.get("clientName")) if project else "", project=_name(project),
                       task=_name(e.get("task")), tags=tuple(_name(t) for t in e.get("tags") or () if _name(t)),
                       billable=e.get("billable"), running=running)


def fetch(api: Api, plan: FetchPlan) -> Fetched:
    path = f"/api/v1/workspaces/{plan.workspace}/user/{plan.user_id}/time-entries"
    start = day_start_utc(plan.first_day, -1).strftime("%Y-%m-%dT%H:%M:%SZ")
    end = day_start_utc(plan.last_day, 2).strftime("%Y-%m-%dT%H:%M:%SZ")
    reading = Reading()
    for page in range(1, MAX_PAGES + 1):
        reply = api.get(path, {"start": start, "end": end, "page": page, "page-size": PAGE_SIZE, "hydrated": "true"})
        rows = reply.data
        if not isinstance(rows, list):
            raise BadResponse(f"{LABEL} answered the time entries with something that is not a list.")
        for e in rows:
            reading.add(e, lambda e: _entry(e, plan), reply)
        if len(rows) < PAGE_SIZE:
            break
    return Fetched(entries=list(reading.entries.values()), window=(plan.first_day, plan.last_day),
                   requests=api.requests_made, unreadable=reading.unreadable)


TRACKER = Tracker(name="clockify", label=LABEL, default_url="https://api.clockify.me", csv_format="clockify",
                  duration_unit="seconds", api=api, identify=identify, fetch=fetch, hosts=HOSTS)


