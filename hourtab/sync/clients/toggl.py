"""Toggl Track API v9: ``/me``, ``/me/time_entries`` and the workspace's clients and projects.

A full read asks ``start_date``/``end_date`` a month at a time, newest first; an increment asks
``since`` (a UNIX time), which also returns entries deleted since then, marked ``server_deleted_at``.
A running entry has a negative ``duration`` and is not counted until it stops. Authentication is
HTTP basic with the token as user name and ``api_token`` as password.

Client and project names are read on every full read and kept; an increment reads them again only when
an entry names a project it does not know. Toggl's ``since`` does not report entries whose project
was renamed (the entries did not change), so a rename reaches the page with the next full read either way.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hourtab.sync.clients import (
    FetchPlan,
    Identity,
    Reading,
    Tracker,
    day_start_utc,
    entry_id,
    parse_time,
    text,
    wall_clock,
)
from hourtab.sync.errors import BadResponse
from hourtab.sync.remote_entries import Fetched, RemoteEntry
from hourtab.sync.transport import Api, Reply

LABEL = "Toggl Track"
#: Days per ``start_date``/``end_date`` request of a full read.
CHUNK_DAYS = 31
#: Projects per page (``page``/``per_page``); a shorter page is the last.
PROJECT_PAGE = 200
MAX_PAGES = 1000


def api(base_url: str, token: str, workspace: str) -> Api:
    return Api(label=LABEL, base_url=base_url, headers={"Accept": "application/json"}, auth=(token, "api_token"),
               secret=token)


def _object(data: Any, what: str) -> dict:
    if not isinstance(data, dict):
        raise BadResponse(f"{LABEL} answered {what} with something that is not an object.")
    return data


def _list(data: Any, what: str) -> list:
    if data is None:
        return []
    if not isinstance(data, list):
        raise BadResponse(f"{LABEL} answered {what} with something that is not a list.")
    return data


def identify(api: Api, workspace: str) -> Identity:
    me = _object(api.get("/api/v9/me").data, "/me")
    if "id" not in me:
        raise BadResponse(f"{LABEL} answered /me without a user id.")
    default = me.get("default_workspace_id")
    return Identity(user_id=text(me["id"]), user_name=text(me.get("fullname") or me.get("email")),
                    timezone=me.get("timezone") or None, workspaces=[],
                    default_workspace=text(default) if default is not None else None)


def _names(api: Api, workspace: str) -> tuple[dict[Any, str], dict[Any, tuple[str, Any]]]:
    clients = {c.get("id"): text(c.get("name")) for c in
               _list(api.get(f"/api/v9/workspaces/{workspace}/clients").data, "/clients")
               if isinstance(c, dict) and isinstance(c.get("id"), int | str)}
    projects: dict[Any, tuple[str, Any]] = {}
    for page in range(1, MAX_PAGES + 1):
        rows = _list(api.get(f"/api/v9/workspaces/{workspace}/projects",
                             {"page": page, "per_page": PROJECT_PAGE}).data, "/projects")
        fresh = [p for p in rows if isinstance(p, dict) and isinstance(p.get("id"), int | str)
                 and p.get("id") not in projects]
        for p in fresh:
            projects[p.get("id")] = (text(p.get("name")), p.get("client_id", p.get("cid")))
        if len(rows) < PROJECT_PAGE or not fresh:   # a server that ignores ``page`` repeats itself
            break
    return clients, projects


def _by_range(api: Api, plan: FetchPlan) -> tuple[list[tuple[Any, Reply]], tuple[dt.date, dt.date], list[str]]:
    """Every entry starting in the plan's days, a month per request, newest first. A range Toggl will
    not serve (it answers 400 for dates too far back) ends the reading there, with a warning."""
    rows: list[tuple[Any, Reply]] = []
    first = plan.first_day
    end = plan.last_day
    warnings: list[str] = []
    while end >= plan.first_day:
        start = max(plan.first_day, end - dt.timedelta(days=CHUNK_DAYS - 1))
        params = {"start_date": _rfc3339(day_start_utc(start, -1)), "end_date": _rfc3339(day_start_utc(end, 2))}
        try:
            reply = api.get("/api/v9/me/time_entries", params)
            rows += [(e, reply) for e in _list(reply.data, "/me/time_entries")]
        except BadResponse as e:
            if e.status != 400:
                raise
            warnings.append(f"{LABEL} would not list entries before {end + dt.timedelta(days=1)}; import older "
                            "entries from a CSV export.")
            first = end + dt.timedelta(days=1)
            break
        first = start
        end = start - dt.timedelta(days=1)
    return rows, (first, plan.last_day), warnings


def _rfc3339(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(e: dict, plan: FetchPlan, clients: dict, projects: dict) -> RemoteEntry:
    project, client_id = projects.get(e.get("project_id", e.get("pid")), ("", None))
    duration = e.get("duration")
    running = not isinstance(duration, int) or duration < 0
    start = parse_time(e.get("start"))
    if start is None:
        raise ValueError("it has no start")
    return RemoteEntry(id=text(e["id"]), user=plan.user_name, start=start, end=parse_time(e.get("stop")),
                       wall_start=wall_clock(start, plan.zone),
                       duration_s=None if running else duration, description=text(e.get("description")),
                       client=clients.get(client_id, ""), project=project,
                       tags=tuple(text(t) for t in e.get("tags") or ()), billable=e.get("billable"),
                       running=running)


def _kept(names: dict) -> tuple[dict[Any, str], dict[Any, tuple[str, Any]]] | None:
    """Names kept by the last sync (JSON turns ids into strings; they are ints again here)."""
    try:
        return ({int(k): v for k, v in names["clients"].items()},
                {int(k): (v[0], v[1]) for k, v in names["projects"].items()})
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def _project_ids(rows: list) -> set:
    ids = (e.get("project_id", e.get("pid")) for e in rows if isinstance(e, dict))
    return {i for i in ids if isinstance(i, int | str)}


def fetch(api: Api, plan: FetchPlan) -> Fetched:
    warnings: list[str] = []
    window = None
    if plan.full or plan.since is None:
        rows, window, warnings = _by_range(api, plan)
    else:
        reply = api.get("/api/v9/me/time_entries", {"since": int(plan.since.timestamp())})
        rows = [(e, reply) for e in _list(reply.data, "/me/time_entries")]
    kept = None if plan.full else _kept(plan.names)
    if kept is None or not _project_ids([e for e, _ in rows]) <= kept[1].keys():
        kept = _names(api, plan.workspace)
    clients, projects = kept
    reading = Reading()
    deleted: set[str] = set()
    for e, reply in rows:
        if isinstance(e, dict) and plan.workspace and text(e.get("workspace_id", e.get("wid"))) != plan.workspace:
            continue
        if isinstance(e, dict) and e.get("server_deleted_at") and entry_id(e) is not None:
            deleted.add(text(entry_id(e)))
        else:
            reading.add(e, lambda e: _entry(e, plan, clients, projects), reply)
    entries = reading.entries
    names = {"clients": {str(k): v for k, v in clients.items() if k is not None},
             "projects": {str(k): list(v) for k, v in projects.items() if k is not None}}
    return Fetched(entries=list(entries.values()), deleted=deleted - entries.keys(), window=window,
                   warnings=warnings, requests=api.requests_made, names=names, unreadable=reading.unreadable)


TRACKER = Tracker(name="toggl", label=LABEL, default_url="https://api.track.toggl.com", csv_format="toggl",
                  duration_unit="seconds", api=api, identify=identify, fetch=fetch,
                  hosts=("api.track.toggl.com",))
