"""One client per tracker, each using only the vendor's documented read endpoints.

Every client module defines a :class:`Tracker`: how to authenticate (``api``), who the token belongs
to and which workspaces it reaches (``identify``), and how to read a stretch of entries (``fetch``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from hourtab.sync.entries import Fetched
from hourtab.sync.errors import InvalidConnection
from hourtab.sync.transport import Api


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
    #: A self-hosted tracker (Kimai) has no public host: the URL must be given.
    needs_url: bool = False
    #: Harvest addresses every request to an account id.
    needs_account: bool = False


def trackers() -> dict[str, Tracker]:
    from hourtab.sync.clients import clockify, harvest, kimai, toggl

    return {t.name: t for t in (toggl.TRACKER, clockify.TRACKER, harvest.TRACKER, kimai.TRACKER)}


TRACKER_NAMES = ("toggl", "clockify", "harvest", "kimai")


def tracker(name: str) -> Tracker:
    found = trackers().get((name or "").strip().lower())
    if found is None:
        raise InvalidConnection(f"Unknown tracker {name!r}; choose one of {', '.join(TRACKER_NAMES)}.")
    return found


def day_start_utc(day: dt.date, days: int = 0) -> dt.datetime:
    """UTC midnight of ``day`` shifted by ``days``: query ranges are widened by a day each side, so every
    entry whose local day lies in the plan is inside them whatever the zone."""
    return dt.datetime.combine(day + dt.timedelta(days=days), dt.time(0), tzinfo=dt.UTC)


def parse_time(value: str | None) -> dt.datetime | None:
    """An ISO 8601 time as the APIs write it ("Z", "+00:00", Kimai's "+0200"), aware; ``None`` for none."""
    if not value:
        return None
    when = dt.datetime.fromisoformat(value.strip())
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def wall_clock(when: dt.datetime | None, zone: str) -> dt.datetime | None:
    """``when`` as a clock in ``zone`` shows it (naive), the way a tracker's CSV export writes it."""
    return when.astimezone(ZoneInfo(zone)).replace(tzinfo=None) if when is not None else None


def text(value: object) -> str:
    return "" if value is None else str(value)
