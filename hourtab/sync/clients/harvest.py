"""Harvest API v2: ``/v2/users/me`` and ``/v2/time_entries``, following ``links.next``.

Requests carry ``Authorization: Bearer`` and ``Harvest-Account-Id``. Harvest has no deletion feed:
each sync re-reads a window (``from``/``to``: the open periods) and a known entry inside it that is no
longer listed was deleted; ``updated_since`` then brings edits to entries outside the window. Entries
are dated (``spent_date``) with decimal ``hours``, as Harvest's CSV report has them; a running timer
(``is_running``) is not counted until it stops.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hourtab.sync.clients import FetchPlan, Identity, Reading, Tracker, text
from hourtab.sync.errors import BadResponse, InvalidConnection
from hourtab.sync.remote_entries import Fetched, RemoteEntry
from hourtab.sync.transport import Api

LABEL = "Harvest"
PER_PAGE = 2000
MAX_PAGES = 10_000


def api(base_url: str, token: str, workspace: str) -> Api:
    if not workspace.strip().isdigit():
        raise InvalidConnection("Harvest needs its account id (a number, shown under Developers in Harvest's "
                                "settings).")
    return Api(label=LABEL, base_url=base_url, secret=token,
               headers={"Authorization": f"Bearer {token}", "Harvest-Account-Id": workspace.strip(),
                        "Accept": "application/json"})


def identify(api: Api, workspace: str) -> Identity:
    me = api.get("/v2/users/me").data
    if not isinstance(me, dict) or "id" not in me:
        raise BadResponse(f"{LABEL} answered /users/me without a user id.")
    name = " ".join(text(me.get(k)).strip() for k in ("first_name", "last_name")).strip()
    # Harvest's zone is a Rails name ("Eastern Time (US & Canada)"), not IANA: the account's is used.
    return Identity(user_id=text(me["id"]), user_name=name or text(me.get("email")), timezone=None,
                    workspaces=[], default_workspace=workspace.strip() or None)


def _name(obj: Any) -> str:
    return text(obj.get("name")) if isinstance(obj, dict) else ""


def _hours(value: Any) -> str:
    """Hours as Harvest's CSV writes them, so the normaliser rounds them from the same digits."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("its hours are not a number")
    shown = repr(float(value))
    return shown if "e" not in shown else f"{value:.6f}"


def _entry(e: dict) -> RemoteEntry:
    running = bool(e.get("is_running"))
    return RemoteEntry(id=text(e["id"]), user=_name(e.get("user")),
                       date=dt.date.fromisoformat(text(e.get("spent_date"))),
                       hours=None if running else _hours(e.get("hours")), description=text(e.get("notes")),
                       client=_name(e.get("client")), project=_name(e.get("project")), task=_name(e.get("task")),
                       billable=e.get("billable"), running=running)


def _read(api: Api, params: dict[str, Any], found: Reading) -> None:
    url: str | None = "/v2/time_entries"
    query: dict[str, Any] | None = {**params, "page": 1, "per_page": PER_PAGE}
    for _ in range(MAX_PAGES):
        if url is None:
            break
        answer = api.get(url, query)
        reply = answer.data
        if not isinstance(reply, dict) or not isinstance(reply.get("time_entries"), list):
            raise BadResponse(f"{LABEL} answered /v2/time_entries without a time_entries list.")
        for e in reply["time_entries"]:
            found.add(e, _entry, answer)
        links = reply.get("links")
        url = links.get("next") if isinstance(links, dict) and isinstance(links.get("next"), str) else None
        query = None   # the link carries every parameter


def fetch(api: Api, plan: FetchPlan) -> Fetched:
    reading = Reading()
    if not plan.full and plan.since is not None:   # first, so the window's reading of an entry wins
        _read(api, {"updated_since": plan.since.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}, reading)
    _read(api, {"from": (plan.first_day - dt.timedelta(days=1)).isoformat(),
                "to": (plan.last_day + dt.timedelta(days=1)).isoformat()}, reading)
    return Fetched(entries=list(reading.entries.values()), window=(plan.first_day, plan.last_day),
                   requests=api.requests_made, unreadable=reading.unreadable)


TRACKER = Tracker(name="harvest", label=LABEL, default_url="https://api.harvestapp.com", csv_format="harvest",
                  duration_unit="hours", api=api, identify=identify, fetch=fetch, needs_account=True,
                  hosts=("api.harvestapp.com",))
