"""One client per tracker, each using only the vendor's documented read endpoints.

Every client module defines a :class:`Tracker`: how to authenticate (``api``), who the token belongs
to and which workspaces it reaches (``identify``), and how to read a stretch of entries (``fetch``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from hourtab.sync.answers import too_deep
from hourtab.sync.errors import InvalidConnection
from hourtab.sync.limits import Budget, Limits
from hourtab.sync.reach import Reach
from hourtab.sync.remote_entries import Fetched, RemoteEntry, Unreadable
from hourtab.sync.transport import Api, Reply


@dataclass(frozen=True)
class Identity:
    user_id: str
    user_name: str
    #: The tracker profile's IANA zone, where the API says one.
    timezone: str | None
    #: (id, label) of the workspaces the token reaches, where the API lists them.
    workspaces: list[tuple[str, str]]
    default_workspace: str | None


@dataclass(frozen=True)
class FetchPlan:
    """What one sync reads: every entry on local days ``first_day``..``last_day`` (a window or the full
    history), plus, for trackers with a change feed, what changed since ``since``."""

    full: bool
    first_day: dt.date
    last_day: dt.date
    since: dt.datetime | None
    workspace: str
    user_id: str
    #: The token owner's name, as the tracker's CSV exports write it in their user column.
    user_name: str
    #: The account zone, for APIs that take local times (Kimai).
    zone: str
    #: Names the last sync kept (Toggl's clients and projects), so an increment need not read them again.
    names: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Tracker:
    name: str
    label: str
    default_url: str
    #: ``source_format`` of this tracker's CSV exports (entries a sync may adopt).
    csv_format: str
    #: How the API writes durations, in the normaliser's units.
    duration_unit: str
    api: Callable[[str, str, str], Api]
    identify: Callable[[Api, str], Identity]
    fetch: Callable[[Api, FetchPlan], Fetched]
    #: The hosts its API may be reached at ("": any public host, for a self-hosted tracker).
    hosts: tuple[str, ...] = ()
    #: A self-hosted tracker (Kimai) has no public host: the URL must be given.
    needs_url: bool = False
    #: Harvest addresses every request to an account id.
    needs_account: bool = False


def trackers() -> dict[str, Tracker]:
    # The clients import this package (Tracker, Api): importing them at its top would be a cycle.
    from hourtab.sync.clients import clockify, harvest, kimai, toggl  # noqa: PLC0415

    return {t.name: t for t in (toggl.TRACKER, clockify.TRACKER, harvest.TRACKER, kimai.TRACKER)}


TRACKER_NAMES = ("toggl", "clockify", "harvest", "kimai")


def tracker(name: str) -> Tracker:
    found = trackers().get((name or "").strip().lower())
    if found is None:
        raise InvalidConnection(f"Unknown tracker {name!r}; choose one of {', '.join(TRACKER_NAMES)}.")
    return found


def open_api(chosen: Tracker, base_url: str, token: str, workspace: str, limits: Limits, budget: Budget) -> Api:
    """The tracker's API client for one token, bounded by ``limits`` and spending ``budget``."""
    reach = Reach(hosts=chosen.hosts, allow_private=limits.allow_private)
    reach.check_url(base_url)
    api = chosen.api(base_url, token, workspace)
    api.reach, api.limits, api.budget = reach, limits, budget
    return api


def entry_id(raw: Any) -> str | None:
    """A listed entry's id as text, or ``None`` when it has none that can be one (a list, a boolean…)."""
    value = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    value = str(value).strip()
    return value if 0 < len(value) <= 64 else None


class Reading:
    """The entries read from a tracker's pages, and those that could not be read: skipped and listed
    (the connection's page shows them), while the rest sync."""

    def __init__(self) -> None:
        self.entries: dict[str, RemoteEntry] = {}
        self._unreadable: dict[tuple[str, str], Unreadable] = {}

    @property
    def unreadable(self) -> list[Unreadable]:
        """Each unreadable entry once, however many pages listed it (and none that another page read)."""
        return [u for u in self._unreadable.values() if u.id not in self.entries]

    def add(self, raw: Any, read: Callable[[dict], RemoteEntry], reply: Reply) -> None:
        ident = entry_id(raw)
        try:
            if ident is None:
                raise ValueError("it has no usable id")
            if reply.cut and too_deep(raw):
                raise ValueError("it is nested too deep to read")
            entry = read(raw)
            self.entries[entry.id] = entry
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
            found = Unreadable(ident or "(no id)", str(e)[:200] or type(e).__name__)
            self._unreadable[(found.id, found.reason)] = found


def day_start_utc(day: dt.date, days: int = 0) -> dt.datetime:
    """UTC midnight of ``day`` shifted by ``days``: query ranges are widened by a day each side, so every
    entry whose local day lies in the plan is inside them whatever the zone."""
    return dt.datetime.combine(day + dt.timedelta(days=days), dt.time(0), tzinfo=dt.UTC)


def parse_time(value: object) -> dt.datetime | None:
    """An ISO 8601 time as the APIs write it ("Z", "+00:00", Kimai's "+0200"), aware; ``None`` for none."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"a time is not text ({type(value).__name__})")
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{value[:40]!r} is not a time") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def wall_clock(when: dt.datetime | None, zone: str) -> dt.datetime | None:
    """``when`` as a clock in ``zone`` shows it (naive), the way a tracker's CSV export writes it."""
    return when.astimezone(ZoneInfo(zone)).replace(tzinfo=None) if when is not None else None


def text(value: object) -> str:
    return "" if value is None else str(value)
