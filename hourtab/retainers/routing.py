"""Which retainer an entry counts against: the rules decide.

* Among the account's active retainers whose match rules accept the entry, the oldest wins.
* An entry that carries no client and no project at all, and that no rule accepts, counts against
  the retainer its upload was imported for (when that one is active): the consultant said where
  the file belongs, and the entry says nothing against it. That is the only thing choosing a
  retainer for an upload does (the zone a file is read in is the exporter's, ``timesheets.zone``).
* Every other entry counts nowhere ("unassigned") until a rule accepts it. A chosen retainer never
  takes another client's rows: that would bill one client for another's work and show them its
  project names.

The same function decides for a file being previewed (rows not stored yet) and for stored entries,
so the preview says exactly what confirming does. Pure except ``active_routes``, which reads the
retainers with explicit columns only (the data migration runs it on an older schema too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import Retainer


@dataclass(frozen=True)
class Route:
    """An active retainer as routing sees it."""

    id: int
    name: str
    timezone: str
    rules: MatchRules


def account_routes(session: Session, account_id: int, active: bool | None = True) -> list[Route]:
    """The account's retainers (active ones by default), oldest first: the order rules are tried in."""
    stmt = (select(Retainer.id, Retainer.name, Retainer.timezone, Retainer.match_rules)
            .where(Retainer.account_id == account_id).order_by(Retainer.id))
    if active is not None:
        stmt = stmt.where(Retainer.active.is_(active))
    return [Route(int(i), name, zone, MatchRules.from_json(rules)) for i, name, zone, rules in session.execute(stmt)]


def active_routes(session: Session, account_id: int) -> list[Route]:
    return account_routes(session, account_id)


def accepts(route: Route, frame: pd.DataFrame) -> pd.Series:
    """Rows ``route`` would take if it were the only retainer: its rules, or its upload's default."""
    chosen = frame["chosen"].astype("Int64") if "chosen" in frame else None
    by_default = (blank(frame) & (chosen == route.id)).fillna(False).astype(bool) if chosen is not None else False
    return route.rules.mask(frame) | by_default


def blank(frame: pd.DataFrame) -> pd.Series:
    """Entries with neither a client nor a project (whitespace counts as nothing)."""
    def empty(col: str) -> pd.Series:
        return frame[col].fillna("").astype("str").str.strip() == ""

    return empty("client") & empty("project")


def targets(frame: pd.DataFrame, routes: Sequence[Route]) -> tuple[pd.Series, pd.Series]:
    """``(target, by_default)`` per row of ``frame`` (client, project, tags, billable, chosen).

    ``target`` is the retainer id (``<NA>`` = unassigned); ``by_default`` marks the rows sent to
    the upload's chosen retainer only because they carry no client or project.
    """
    target = pd.Series(pd.NA, index=frame.index, dtype="Int64")
    for route in routes:
        wanted = route.rules.mask(frame) & target.isna()
        target[wanted] = route.id
    chosen = frame["chosen"].astype("Int64") if "chosen" in frame else pd.Series(pd.NA, index=frame.index,
                                                                                 dtype="Int64")
    by_default = (target.isna() & blank(frame) & chosen.isin([r.id for r in routes])).fillna(False).astype(bool)
    target[by_default] = chosen[by_default]
    return target, by_default


def settle(frame: pd.DataFrame, routes: Sequence[Route], archived: Sequence[Route]) -> tuple[pd.Series, pd.Series]:
    """``targets`` for stored entries (``current``: where each counts now, ``<NA>`` for none).

    An archived retainer keeps what it holds and its rules accept: its page and statements are
    its history. What it holds against its rules (the pre-issue-19 "a chosen retainer takes the
    whole file") goes where the rules send it.
    """
    target, by_default = targets(frame, routes)
    current = frame["current"].astype("Int64")
    for route in archived:
        keep = (current == route.id).fillna(False).astype(bool) & accepts(route, frame)
        target = target.mask(keep, route.id)
        by_default = by_default & ~keep
    return target, by_default


def row_zones(frame: pd.DataFrame, routes: Sequence[Route], fallback: str) -> pd.Series:
    """The zone each row is dated in: its retainer's, else ``fallback`` (a synced entry's connection's)."""
    if all(r.timezone == fallback for r in routes):   # the usual case: matching the rules would change nothing
        return pd.Series(fallback, index=frame.index, dtype="str")
    target, _ = targets(frame.drop(columns=["chosen"], errors="ignore"), routes)
    zone_of = {r.id: r.timezone for r in routes}
    return target.map(lambda t: fallback if pd.isna(t) else zone_of[int(t)]).astype("str")
