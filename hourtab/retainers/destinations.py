"""Where an upload's hours go, before it is confirmed: per retainer, and what matches none.

The preview shows it and the upload keeps it (the import page shows the same table afterwards):
one row per retainer the file's entries count against (entries, hours, current balance before →
after, closed periods it would revise) and one for the entries no retainer's rules match, listed
by client and project. Entries sent to the chosen retainer only because they carry no client or
project are listed on their own, so the consultant confirms them knowingly.

Computed with the routing the import then applies (``routing.targets``), so it cannot disagree.
Reads only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.retainers.assign import stored_routes
from hourtab.retainers.days import local_days
from hourtab.retainers.ledger import Ledger
from hourtab.retainers.models import Retainer
from hourtab.retainers.presentation import format_hours
from hourtab.retainers.revisions import closed, ledgers_now, revised_retainers
from hourtab.retainers.routing import account_routes, settle
from hourtab.retainers.totals import DayTotals, held_durations
from hourtab.timesheets.normalise import hms

#: Rows listed among the entries with no client or project (the count is always complete).
MAX_DEFAULTED = 50


def _retainers(session: Session, account_id: int) -> dict[int, tuple[str, str, bool, str]]:
    """(name, client, active, time zone) of each of the account's retainers."""
    rows = session.execute(select(Retainer.id, Retainer.name, Retainer.client, Retainer.active, Retainer.timezone)
                           .where(Retainer.account_id == account_id)).all()
    return {int(i): (name, client, bool(active), zone) for i, name, client, active, zone in rows}


def file_targets(session: Session, account_id: int, frame: pd.DataFrame, known_ids: np.ndarray,
                 chosen_id: int | None) -> tuple[pd.Series, pd.Series, pd.Series]:
    """``(target, by_default, current)`` per row of a file: where it will count, and where it counts now.

    Rows already stored (``known_ids`` >= 0) keep the chosen retainer of the upload that first
    brought them, and stay with an archived retainer that holds them, exactly as ``assign`` routes.
    """
    rows = frame.reset_index(drop=True)
    known = pd.Series(np.asarray(known_ids, dtype=np.int64), index=rows.index).astype(int)
    chosen = pd.Series(pd.NA if chosen_id is None else chosen_id, index=rows.index, dtype="Int64")
    current = pd.Series(pd.NA, index=rows.index, dtype="Int64")
    is_known = known >= 0
    routes, archived = account_routes(session, account_id), account_routes(session, account_id, active=False)
    if is_known.any() and (routes or archived):
        stored = stored_routes(session, account_id, known[is_known].tolist()).set_index("id")
        chosen[is_known] = known[is_known].map(stored["chosen"]).astype("Int64")
        current[is_known] = known[is_known].map(stored["current"]).astype("Int64")
    target, by_default = settle(rows.assign(chosen=chosen, current=current), routes, archived)
    return target, by_default, current


def _balances(session: Session, changing: pd.DataFrame, target: pd.Series, involved: list[int],
              zones: dict[int, str], replaced: list[int], now: dt.datetime, seen: set[int]) -> dict[int, dict[str, Any]]:
    """Per involved retainer: the current period's balance before and after, and the closed periods that would change.

    ``changing``: the file's rows the import writes (new or changed), ``target`` where each goes;
    ``replaced``: the stored ids those rows, and rows leaving, were; ``seen``: retainers a period of
    which was revised before (their figures were seen even if they count nothing now). Both
    ledgers come from the day totals, read for all retainers at once; "after" takes out what
    leaves and adds what arrives.
    """
    leaving = held_durations(session, replaced)
    # Each row's local day in each zone involved (one zone, as a rule): computed once a zone.
    days_in = {zone: dict(zip(changing.index, local_days(changing["start_at"], changing["local_date"], zone),
                              strict=True))
               for zone in {zones[rid] for rid in involved}} if len(changing) else {}
    changes: dict[int, Callable[[DayTotals], DayTotals]] = {}
    for rid in involved:
        mine = changing.index[(target.loc[changing.index] == rid).fillna(False).astype(bool)]
        if len(mine) or rid in leaving:
            changes[rid] = _change(leaving.get(rid, ([], [])), [days_in[zones[rid]][i] for i in mine],
                                   changing.loc[mine, "duration_s"].astype("int64").tolist())
    ledgers = ledgers_now(session, involved, now, changes)
    return {rid: _summary(before, after, rid in seen or counted > 0) for rid, (before, after, counted) in ledgers.items()}


def _change(leaving: tuple[list[dt.date], list[int]], days: list[dt.date],
            seconds: list[int]) -> Callable[[DayTotals], DayTotals]:
    def change(totals: DayTotals) -> DayTotals:
        return totals.plus(*leaving, -1).plus(days, seconds, 1)
    return change


def _summary(before: Ledger, after: Ledger, held_before: bool) -> dict[str, Any]:
    was, now_closed = closed(before), closed(after)
    by_start = {p.period.start: p.period.label for p in after.periods}
    revises = [{"period": by_start[s], "start": s.isoformat(), "was_hours": format_hours(was[s][0]),
                "hours": format_hours(now_closed[s][0])}
               for s in sorted(was) if held_before and s in now_closed and now_closed[s] != was[s]]
    return {"period": before.current.period.label,
            "balance_before_seconds": before.current.closing_s, "balance_after_seconds": after.current.closing_s,
            "balance_before": format_hours(before.current.closing_s),
            "balance_after": format_hours(after.current.closing_s), "revises": revises}


def upload_destinations(session: Session, account_id: int, frame: pd.DataFrame, known_ids: np.ndarray,
                        chosen_id: int | None, zones: list[dict] | None = None, now: dt.datetime | None = None,
                        touched: np.ndarray | None = None) -> dict[str, Any]:
    """The table of where the file's entries count (see the module docstring), as plain JSON.

    ``touched``: rows the import writes (new or changed; default: all), the others are stored as they are.
    """
    now = now or dt.datetime.now(dt.UTC)
    rows = frame.reset_index(drop=True)
    target, by_default, current = file_targets(session, account_id, rows, known_ids, chosen_id)
    known = pd.Series(np.asarray(known_ids, dtype=np.int64), index=rows.index).astype(int)
    written = pd.Series(np.ones(len(rows), bool) if touched is None else np.asarray(touched, bool), index=rows.index)
    # A row stored as it is keeps the routing it was given (the import routes only what it writes).
    stay = ~written & (known >= 0)
    same = (target == current).fillna(False).astype(bool) | (target.isna() & current.isna())
    by_default = by_default & (~stay | same)
    target = target.mask(stay, current)
    changing = written
    info = _retainers(session, account_id)
    involved = sorted({int(t) for t in target.dropna()} | {int(c) for c in current.dropna()})
    seen = revised_retainers(session, account_id) if involved else set()
    replaced = known[changing & (known >= 0)].tolist()
    balances = _balances(session, rows.loc[changing], target, involved, {rid: info[rid][3] for rid in involved},
                         replaced, now, seen)
    out: list[dict[str, Any]] = []
    for rid in involved:
        mine = (target == rid).fillna(False).astype(bool)
        name, client, active, _ = info[rid]
        seconds = int(rows.loc[mine, "duration_s"].sum())
        out.append({"id": rid, "name": name, "client": client, "archived": not active,
                    "entries": int(mine.sum()), "seconds": seconds, "hours": format_hours(seconds),
                    "default_entries": int((mine & by_default).sum()),
                    **balances[rid]})
    nowhere = target.isna()
    groups = (rows.loc[nowhere].groupby(["client", "project"], sort=True)["duration_s"].agg(["sum", "count"])
              .reset_index())
    unassigned_s = int(rows.loc[nowhere, "duration_s"].sum())
    defaulted = rows.loc[by_default]
    chosen_name = info.get(chosen_id, ("",))[0] if chosen_id is not None else None
    zone_names = sorted({z["zone"] for z in zones or []})
    return {
        "retainers": out,
        "unassigned": {"entries": int(nowhere.sum()), "seconds": unassigned_s, "hours": format_hours(unassigned_s),
                       "groups": [{"client": g["client"], "project": g["project"], "entries": int(g["count"]),
                                   "seconds": int(g["sum"]), "hours": format_hours(int(g["sum"]))}
                                  for g in groups.to_dict("records")]},
        "defaulted": {"retainer": chosen_name, "entries": len(defaulted),
                      "rows": [{"line": int(r["line"]), "date": pd.Timestamp(r["local_date"]).date().isoformat(),
                                "description": r["description"] or "", "duration": hms(int(r["duration_s"]))}
                               for r in defaulted.head(MAX_DEFAULTED).to_dict("records")]},
        "zones": zones or [], "mixed_zones": len(zone_names) > 1,
    }
