"""Repairs the data migrations run (and their tests): assignments made before rules decided
(migration 0011), and rule names split on commas by the old terms form (migration 0017e).

Before, an upload imported "for" a retainer sent every one of its entries there, whatever the
rules said: one client's page listed another's work, and that client was billed for it. This
routes every account's entries by the rules again (``assign.route_entries``) and records each
closed period whose figures that changes as revised (reason ``migration``), so the fix itself is
visible to the clients whose history it corrects.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, inspect, select, update
from sqlalchemy.orm import Session

from hourtab.retainers.assign import route_entries
from hourtab.retainers.entry_names import entry_names
from hourtab.retainers.matching import norm
from hourtab.retainers.models import Retainer, retainer_entries
from hourtab.retainers.revisions import watch_closed_periods


def rematch_old_assignments(session: Session, now: dt.datetime | None = None) -> dict[int, int]:
    """Route every account's entries by the rules; ``{account_id: entries moved}`` for those that changed.

    Entries nobody held stay unassigned: the old rule only ever added entries (to a chosen
    retainer), so only held entries can be wrong. Never commits.
    """
    if not session.scalar(select(func.count()).select_from(retainer_entries)):
        return {}
    moved: dict[int, int] = {}
    for account_id in session.scalars(select(Retainer.account_id).distinct().order_by(Retainer.account_id)):
        days = _has_days(session)
        with watch_closed_periods(session, account_id, "migration", now=now, from_entries=not days):
            routed = route_entries(session, account_id, store_days=days)
        if routed.moved:
            moved[account_id] = routed.moved
    return moved


def _has_days(session: Session) -> bool:
    """Does ``retainer_entries`` have its ``day`` yet? Not inside the migrations older than it."""
    return "day" in {c["name"] for c in inspect(session.connection()).get_columns("retainer_entries")}


def _key(name: str) -> str:
    """A name with the spaces around its commas dropped: how a part split off it compares."""
    return ",".join(p.strip() for p in norm(name).split(","))


def rejoin(names: Sequence[str], known: Sequence[str]) -> tuple[str, ...]:
    """Rule names once split on commas, joined back where the parts match no name the entries
    carry and the joined name does (spelled as the entries spell it)."""
    spelled = {_key(n): n for n in known}
    out: list[str] = []
    i = 0
    while i < len(names):
        for j in range(len(names), i + 1, -1):
            parts = names[i:j]
            joined = _key(",".join(parts))
            if joined in spelled and not any(_key(p) in spelled for p in parts):
                out.append(spelled[joined])
                i = j
                break
        else:
            out.append(names[i])
            i += 1
    return tuple(out)


def repaired_rules(rules: dict[str, Any], names: dict[str, list[str]]) -> dict[str, Any]:
    """``rules`` (a retainer's ``match_rules``) with split client and project names joined back.

    Tags are stored joined with ", " on each entry, so a tag never holds a comma: left as they are.
    """
    out = dict(rules)
    for field in ("clients", "projects"):
        out[field] = list(rejoin([str(n) for n in rules.get(field) or ()], names[field]))
    return out


def repair_split_rules(session: Session, now: dt.datetime | None = None) -> dict[int, dict[str, Any]]:
    """Join back the rule names the terms form once split on commas; ``{retainer_id: new rules}``.

    "Panageas, Kathy" saved through that form became the clients "Panageas" and "Kathy", and the
    retainer lost every entry. Each account whose rules this repairs has its entries routed again,
    and the closed periods that get their figures back are recorded as revised (reason
    ``migration``), as the loss was. Never commits.
    """
    rows = session.execute(select(Retainer.id, Retainer.account_id, Retainer.match_rules)
                           .order_by(Retainer.account_id, Retainer.id)).all()
    fixed: dict[int, dict[str, Any]] = {}
    for account_id in sorted({int(a) for _, a, _ in rows}):
        names = entry_names(session, account_id, limit=None)
        repaired = {int(rid): (rules, repaired_rules(rules, names)) for rid, a, rules in rows if a == account_id}
        mine = {rid: new for rid, (old, new) in repaired.items() if _listed(new) != _listed(old)}
        if not mine:
            continue
        days = _has_days(session)
        with watch_closed_periods(session, account_id, "migration", now=now, from_entries=not days):
            for rid, rules in mine.items():
                session.execute(update(Retainer).where(Retainer.id == rid).values(match_rules=rules))
            route_entries(session, account_id, store_days=days)
        fixed.update(mine)
    return fixed


def _listed(rules: dict[str, Any]) -> dict[str, Any]:
    return {f: [str(n) for n in rules.get(f) or ()] for f in ("clients", "projects")}
