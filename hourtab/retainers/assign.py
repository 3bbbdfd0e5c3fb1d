"""Which retainer each time entry counts against, kept true by the services that change entries.

Assignment is part of every change that can alter it: an import (CLI or web), a confirmed
removal, a new retainer, new match rules, archiving or reactivation all call into this module
inside the caller's transaction, so the consultant's ledger is right the moment the change commits.
Where an entry goes is decided by ``routing.targets`` alone (the retainers' rules), every time:
after a rule change the entries a retainer no longer matches go where the rules now send them, or
to "unassigned". Entries held by an archived retainer stay with it (its history); it takes no new
ones. Every such change also bumps ``Retainer.revision`` of the account's retainers only;
public-page caches key on it, so other accounts' pages never notice.

Reads and writes here name their columns (Core statements), so the data migration that repairs
assignments made the old way can run this very code.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from hourtab.core.db import columns, insert_new_rows
from hourtab.retainers.days import refresh_days, routed_rows
from hourtab.retainers.kept_totals import held_days, recompute
from hourtab.retainers.models import Retainer, retainer_entries
from hourtab.retainers.routing import account_routes, settle
from hourtab.timesheets.models import TimeEntry, Upload

#: Ids per ``IN (...)`` list: well under every backend's parameter limit.
CHUNK = 500
#: Beyond this many ids, one scan of the account's entries beats hundreds of ``IN`` lists.
SCAN_ABOVE = 5000


def bump_page_version(retainer: Retainer) -> None:
    """Mark what the client sees as changed (a new revision, so every worker's page cache misses)."""
    retainer.revision = (retainer.revision or 0) + 1
    retainer.updated_at = dt.datetime.now(dt.UTC)


def bump_page_versions(session: Session, retainer_ids: Iterable[int]) -> None:
    """``bump_page_version`` for retainers by id, in one statement (their loaded objects are kept in step)."""
    ids = sorted({int(i) for i in retainer_ids})
    if ids:
        session.execute(update(Retainer).where(Retainer.id.in_(ids))
                        .values(revision=Retainer.revision + 1, updated_at=dt.datetime.now(dt.UTC))
                        .execution_options(synchronize_session="fetch"))


@dataclass
class Routed:
    """What ``route_entries`` changed: entries gained and lost per retainer id."""

    gained: dict[int, int] = field(default_factory=dict)
    lost: dict[int, int] = field(default_factory=dict)

    @property
    def moved(self) -> int:
        return sum(self.gained.values()) + sum(self.lost.values())

    @property
    def retainer_ids(self) -> set[int]:
        return set(self.gained) | set(self.lost)


ENTRY_NAMES = ["id", "client", "project", "tags", "billable", "chosen", "current"]


def stored_routes(session: Session, account_id: int, entry_ids: list[int] | None) -> pd.DataFrame:
    """Stored entries (all, or the given ids) with their upload's chosen retainer and where they count."""
    te, held = TimeEntry, retainer_entries
    stmt = (select(te.id, te.client, te.project, te.tags, te.billable, Upload.retainer_id, held.c.retainer_id)
            .join(Upload, Upload.id == te.upload_id)
            .outerjoin(held, held.c.entry_id == te.id)
            .where(te.account_id == account_id))
    if entry_ids is None or len(entry_ids) > SCAN_ABOVE:
        frames = [pd.DataFrame(columns(session, stmt, ENTRY_NAMES))]
        if entry_ids is not None:
            frames = [frames[0][frames[0]["id"].isin(entry_ids)]]
    else:
        frames = [pd.DataFrame(columns(session, stmt.where(te.id.in_(entry_ids[k:k + CHUNK])), ENTRY_NAMES))
                  for k in range(0, len(entry_ids), CHUNK)]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame({n: pd.Series(dtype="object") for n in ENTRY_NAMES})
    return pd.concat(frames, ignore_index=True)


def route_entries(session: Session, account_id: int, entry_ids: Iterable[int] | None = None, *,
                  store_days: bool = True) -> Routed:
    """(Re)assign the account's entries (all, or the given ids) to where the rules send them now.

    The service for everything that brings or changes entries (imports, live tracker sync) and
    for every rule change. It never commits; closed periods it changes are recorded by the
    caller's ``revisions.watch_closed_periods``; the day totals it changes are summed again here
    (``kept_totals``). Returns what moved. ``store_days=False`` is for the data migrations older than
    ``retainer_entries.day`` (the migrations adding the days and the kept totals fill them in).
    """
    ids = None if entry_ids is None else sorted({int(i) for i in entry_ids})
    routed = Routed()
    if ids == []:
        return routed
    session.flush()
    routes = account_routes(session, account_id)
    archived = account_routes(session, account_id, active=False)
    if not routes and not archived:
        return routed  # no retainer: nothing counts anywhere, nothing can move
    frame = stored_routes(session, account_id, ids)
    if not len(frame):
        return routed
    current = frame["current"].astype("Int64")
    target, _ = settle(frame, routes, archived)
    moved = ~((target == current).fillna(False).astype(bool) | (target.isna() & current.isna()))
    # The entries written (given) or moving: the day totals of the days they count on, before and
    # after, are summed again (``kept_totals``); a migration older than the stored days has neither.
    written = ids if ids is not None else frame.loc[moved, "id"].astype(int).tolist()
    counted_on = held_days(session, written) if store_days else set()
    if ids is not None:  # entries given were written: their times, so their days, may have changed
        refresh_days(session, frame.loc[~moved & current.notna(), "id"].astype(int).tolist())
    if not moved.any():
        if store_days:
            recompute(session, account_id, counted_on | held_days(session, written))
        return routed
    leaving = frame.loc[moved & current.notna(), "id"].astype(int).tolist()
    for k in range(0, len(leaving), CHUNK):
        session.execute(delete(retainer_entries).where(retainer_entries.c.entry_id.in_(leaving[k:k + CHUNK])))
    arriving = moved & target.notna()
    arriving_ids, targets = frame.loc[arriving, "id"].astype(int).tolist(), target[arriving].astype(int).tolist()
    if arriving_ids:
        rows = (routed_rows(session, arriving_ids, targets) if store_days
                else list(zip(arriving_ids, targets, strict=True)))
        # The key is the entry: a concurrent transaction that routed the same entry routed it to the
        # same retainer (the rules decide), so a clash is skipped, not an error.
        insert_new_rows(session, retainer_entries, ("entry_id", "retainer_id", "day")[:3 if store_days else 2], rows,
                        conflict=("entry_id",))
    if store_days:
        recompute(session, account_id, counted_on | held_days(session, written))
    routed.lost = _counts(current[moved & current.notna()])
    routed.gained = _counts(target[arriving])
    bump_page_versions(session, routed.retainer_ids)
    session.flush()
    return routed


def _counts(retainer_ids: pd.Series) -> dict[int, int]:
    """How many entries each retainer id in ``retainer_ids`` stands for."""
    counts = retainer_ids.value_counts()
    return {int(k): int(v) for k, v in zip(counts.index.tolist(), counts.tolist(), strict=True)}


def entries_changed(session: Session, account_id: int, entry_ids: Iterable[int] | None = None) -> dict[int, int]:
    """After an account's entries were added, changed or removed: route them, bump every page.

    Every retainer of the account is touched (not just those that gained entries) because an import
    can change or remove entries a retainer already holds, and each page shows the last import time.
    """
    routed = route_entries(session, account_id, entry_ids)
    others = session.scalars(select(Retainer.id).where(Retainer.account_id == account_id)).all()
    bump_page_versions(session, set(others) - routed.retainer_ids)
    session.flush()
    return routed.gained
