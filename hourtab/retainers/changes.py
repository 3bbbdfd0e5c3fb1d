"""A change that can rewrite closed periods, previewed by running it, and kept only when confirmed.

Rule edits, terms edits, archiving and reactivating, entry removals and restores, late imports:
each adapter runs its service through ``apply``. The change runs inside a SAVEPOINT; what it did
is measured there (where each of the account's entries counts before and after, and the revisions
its ``revisions.watch_closed_periods`` recorded for closed periods), and then it is kept only if it
touches no closed period or if the consultant confirmed this very preview (its digest). Otherwise
the savepoint is rolled back and ``NeedsConfirmation`` carries the preview. So the preview is the
change itself, by the same code, never an estimate of it, and confirming applies exactly that.
Never commits.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hourtab.core.db import columns
from hourtab.core.errors import Conflict
from hourtab.retainers.models import PeriodRevision, Retainer, retainer_entries
from hourtab.retainers.periods import periods_through
from hourtab.retainers.presentation import format_hours
from hourtab.timesheets.models import TimeEntry

T = TypeVar("T")

#: Places an entry can be besides a retainer (whose ids are positive).
UNASSIGNED, NOT_COUNTED = 0, -1
PLACE_NAMES = {UNASSIGNED: "unassigned", NOT_COUNTED: "not counted"}


@dataclass(frozen=True)
class Move:
    """Entries that count elsewhere after the change (``source == target``: changed in place)."""

    source: int
    target: int
    entries: int
    #: Their hours where they arrive (in place: the change of their hours, signed).
    seconds: int


@dataclass(frozen=True)
class PeriodChange:
    """A closed period whose figures the change revises."""

    retainer_id: int
    start: dt.date
    label: str
    was: tuple[int, int]  # (used seconds, entries)
    now: tuple[int, int]


@dataclass(frozen=True)
class ChangePreview:
    moves: tuple[Move, ...]
    periods: tuple[PeriodChange, ...]
    names: dict[int, str]

    @property
    def touches_closed(self) -> bool:
        return bool(self.periods)

    def name(self, place: int) -> str:
        return PLACE_NAMES.get(place) or self.names.get(place, f"retainer {place}")

    def _place(self, place: int) -> dict[str, Any]:
        return {"retainer_id": place if place > 0 else None, "name": self.name(place)}

    def facts(self) -> dict[str, Any]:
        return {
            "moves": [{"from": self._place(m.source), "to": self._place(m.target), "entries": m.entries,
                       "seconds": m.seconds, "hours": format_hours(m.seconds)} for m in self.moves],
            "closed_periods": [{"retainer_id": p.retainer_id, "retainer": self.name(p.retainer_id),
                                "period": p.label, "start": p.start.isoformat(),
                                "was_seconds": p.was[0], "was_hours": format_hours(p.was[0]), "was_entries": p.was[1],
                                "seconds": p.now[0], "hours": format_hours(p.now[0]), "entries": p.now[1]}
                               for p in self.periods]}

    @property
    def digest(self) -> str:
        """What a confirmation names: the change's effect, so a different effect needs a new look."""
        return hashlib.sha256(json.dumps(self.facts(), sort_keys=True).encode()).hexdigest()[:20]

    def as_json(self) -> dict[str, Any]:
        return {**self.facts(), "touches_closed": self.touches_closed, "digest": self.digest}

    def lines(self) -> list[str]:
        """The preview as text (the CLI prints it; the page shows the same as tables)."""
        out = [f"{_entries(m.entries)} ({format_hours(m.seconds)} h): "
               + (f"changed in {self.name(m.source)}" if m.source == m.target
                  else f"{self.name(m.source)} → {self.name(m.target)}") for m in self.moves]
        out += [f"{self.name(p.retainer_id)}, {p.label} (closed): {format_hours(p.was[0])} h → "
                f"{format_hours(p.now[0])} h used ({p.was[1]} → {_entries(p.now[1])})" for p in self.periods]
        return out or ["Nothing moves and no closed period changes."]


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


class NeedsConfirmation(Conflict):
    """The change revises closed periods and was not confirmed (or its effect changed since the preview)."""

    def __init__(self, preview: ChangePreview, stale: bool = False, hint: str = "confirm it to apply it") -> None:
        n = len(preview.periods)
        what = f"{n} closed period{'' if n == 1 else 's'} the client has already seen"
        super().__init__(f"The effect of this change differs from the preview you confirmed: it revises {what}; "
                         f"look at it again and {hint.split(' to ')[0]}." if stale else
                         f"This change revises {what}; {hint}.")
        self.preview = preview
        self.stale = stale


def _places(session: Session, account_id: int) -> pd.DataFrame:
    """Every entry of the account: ``entry_id``, ``seconds`` and ``place`` (retainer id, or the constants)."""
    te, held = TimeEntry, retainer_entries
    stmt = (select(te.id, te.duration_s, te.status, held.c.retainer_id)
            .outerjoin(held, held.c.entry_id == te.id).where(te.account_id == account_id))
    frame = pd.DataFrame(columns(session, stmt, ["entry_id", "seconds", "status", "retainer_id"]))
    place = pd.to_numeric(frame["retainer_id"]).fillna(UNASSIGNED).astype("int64")
    place[(frame["status"] == "removed").to_numpy()] = NOT_COUNTED
    return pd.DataFrame({"entry_id": frame["entry_id"].astype("int64"), "seconds": frame["seconds"].astype("int64"),
                         "place": place}).set_index("entry_id")


def _moves(before: pd.DataFrame, after: pd.DataFrame) -> tuple[Move, ...]:
    both = before.merge(after, how="outer", left_index=True, right_index=True, suffixes=("_was", "_now"))
    both = both.fillna({"place_was": NOT_COUNTED, "place_now": NOT_COUNTED, "seconds_was": 0, "seconds_now": 0})
    both = both.astype("int64")
    moved = both[both["place_was"] != both["place_now"]]
    changed = both[(both["place_was"] == both["place_now"]) & (both["seconds_was"] != both["seconds_now"])
                   & (both["place_now"] != NOT_COUNTED)]
    # Grouped on int64 columns, so every key is an int (pandas types group keys as any hashable).
    out = [Move(int(s), int(t), len(g), int(g["seconds_was" if t == NOT_COUNTED else "seconds_now"].sum()))
           for (s, t), g in cast(Iterable[tuple[tuple[int, int], pd.DataFrame]],
                                 moved.groupby(["place_was", "place_now"], sort=True))]
    out += [Move(int(p), int(p), len(g), int((g["seconds_now"] - g["seconds_was"]).sum()))
            for p, g in cast(Iterable[tuple[int, pd.DataFrame]], changed.groupby("place_now", sort=True))]
    return tuple(out)


def _last_revision(session: Session, account_id: int) -> int:
    return session.scalar(select(func.max(PeriodRevision.id)).where(PeriodRevision.account_id == account_id)) or 0


def _periods(session: Session, account_id: int, after_id: int) -> tuple[PeriodChange, ...]:
    """The revisions recorded since ``after_id``, one per period (first ``was``, last ``now``)."""
    rows = session.scalars(select(PeriodRevision).where(PeriodRevision.account_id == account_id,
                                                        PeriodRevision.id > after_id).order_by(PeriodRevision.id))
    found: dict[tuple[int, dt.date], tuple[tuple[int, int], tuple[int, int]]] = {}
    for r in rows:
        key = (r.retainer_id, r.period_start)
        was = found[key][0] if key in found else (r.was_used_s, r.was_entries)
        found[key] = (was, (r.used_s, r.entries))
    return tuple(PeriodChange(rid, start, _label(session, rid, start), was, now)
                 for (rid, start), (was, now) in sorted(found.items()) if was != now)


def _label(session: Session, retainer_id: int, start: dt.date) -> str:
    retainer = session.get(Retainer, retainer_id)
    if retainer is None:
        return start.isoformat()
    match = [p for p in periods_through(retainer.terms(), start) if p.start == start]
    return match[0].label if match else start.isoformat()


def _names(session: Session, account_id: int) -> dict[int, str]:
    return {int(i): n for i, n in session.execute(select(Retainer.id, Retainer.name)
                                                  .where(Retainer.account_id == account_id))}


def apply(session: Session, account_id: int, change: Callable[[], T], *,
          confirm: str | bool | None = None, keep: bool = True, moves: bool = True) -> tuple[T, ChangePreview]:
    """Run ``change()`` and measure it; keep it unless it revises closed periods unconfirmed.

    ``confirm``: ``True`` (whatever it does), the digest of the preview the consultant saw, or
    ``None``. ``keep=False`` measures and always rolls back (a preview only). ``moves=False``
    leaves out where entries go (two reads of every entry of the account; an import shows its own
    routing). Raises ``NeedsConfirmation`` (nothing kept) when the change touches a closed period
    unconfirmed.
    """
    session.flush()
    before = _places(session, account_id) if moves else None
    last = _last_revision(session, account_id)
    try:
        with session.begin_nested():   # released when the change is kept, rolled back on any raise
            result = change()
            session.flush()
            moved = _moves(before, _places(session, account_id)) if before is not None else ()
            preview = ChangePreview(moved, _periods(session, account_id, last), _names(session, account_id))
            confirmed = confirm is True or (bool(confirm) and confirm == preview.digest)
            if not keep or (preview.touches_closed and not confirmed):
                raise _Discarded(preview)
    except _Discarded as discarded:
        if keep:
            raise NeedsConfirmation(discarded.preview, stale=isinstance(confirm, str) and bool(confirm)) from None
        return result, discarded.preview
    return result, preview


class _Discarded(Exception):
    """Leaves the savepoint by rolling it back, carrying what the change did."""

    def __init__(self, preview: ChangePreview) -> None:
        super().__init__("discarded")
        self.preview = preview
