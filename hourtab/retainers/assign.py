"""Which retainer each time entry counts against, kept true by the services that change entries.

Assignment is part of every change that can alter it: an import (CLI or web), a confirmed
removal, a new retainer, new match rules, terms, credits or reactivation all call into this module
inside the caller's transaction, so the consultant's ledger is right the moment the change commits.
Every such change also bumps ``Retainer.revision`` of the account's retainers only; public-page
caches key on it, so other accounts' pages never notice.
"""

from __future__ import annotations

import datetime as dt

import pandas as pd
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from hourtab.core.db import columns
from hourtab.core.scoping import select_owned
from hourtab.retainers.models import Retainer, retainer_entries
from hourtab.timesheets.models import TimeEntry, Upload


def touch(retainer: Retainer) -> None:
    """Mark what the client sees as changed (a new revision, so every worker's page cache misses)."""
    retainer.revision = (retainer.revision or 0) + 1
    retainer.updated_at = dt.datetime.now(dt.UTC)


def _unassigned(session: Session, account_id: int) -> pd.DataFrame:
    te = TimeEntry
    # entry_id is the assignment table's key, never NULL, so NOT IN is exact.
    stmt = (select(te.id, te.client, te.project, te.tags, te.billable, Upload.retainer_id)
            .join(Upload, Upload.id == te.upload_id)
            .where(te.account_id == account_id, te.status != "removed",
                   te.id.not_in(select(retainer_entries.c.entry_id))))
    return pd.DataFrame(columns(session, stmt, ["id", "client", "project", "tags", "billable", "chosen"]))


def match_entries(session: Session, account_id: int) -> dict[int, int]:
    """Assign the account's unassigned entries to its active retainers; ``{retainer_id: newly assigned}``.

    Entries already assigned stay where they are. An upload imported for a chosen retainer
    (``Upload.retainer_id``) sends its entries there; otherwise, among retainers whose rules match
    an entry, the oldest wins.
    """
    active = list(session.scalars(select_owned(Retainer, account_id).where(Retainer.active.is_(True))
                                  .order_by(Retainer.id)))
    if not active:
        return {}
    frame = _unassigned(session, account_id)
    added: dict[int, int] = {}
    if frame.empty:
        return added
    taken = pd.Series(False, index=frame.index)
    masks = [(r, frame["chosen"] == r.id) for r in active] + [(r, r.rules().mask(frame)) for r in active]
    for retainer, wanted in masks:
        mask = wanted & ~taken
        ids = frame.loc[mask, "id"].tolist()
        if ids:
            session.execute(insert(retainer_entries), [{"entry_id": int(i), "retainer_id": retainer.id} for i in ids])
            added[retainer.id] = added.get(retainer.id, 0) + len(ids)
            taken |= mask
            touch(retainer)
    session.flush()
    return added


def entries_changed(session: Session, account_id: int) -> dict[int, int]:
    """After an account's entries were added, changed or removed: assign new ones, bump every page.

    Every retainer of the account is touched (not just those that gained entries) because an import
    can change or remove entries a retainer already holds, and each page shows the last import time.
    """
    added = match_entries(session, account_id)
    for retainer in session.scalars(select_owned(Retainer, account_id)):
        if retainer.id not in added:
            touch(retainer)
    session.flush()
    return added
