"""Day totals kept in the transaction of every change, so a ledger never reads its history's entries.

``retainer_day_totals`` holds, per retainer, rounding rule and local day, the counted entries and
their seconds rounded by that rule: what ``totals.day_totals`` would otherwise sum with a
``GROUP BY`` over every assignment. A change keeps it true by recomputing, from the entries, the
(retainer, day) pairs it touched, before and after: an import or sync costs the days of its own
rows, not the account's history. Recomputing (rather than adding deltas) means a pair is right
whatever the change did to it, and two changes of one account never interleave: the first to
recompute holds the account's lock (``lock_account``) until it commits, so the second recomputes
from a view that includes it.

Who calls it: ``assign.route_entries``, which every change of entries (imports, removals, syncs,
rule changes) goes through with the entries it wrote; the retainer service when a retainer's
rules or zone change (``keep_rules``, ``rebuild``). The rules kept for a retainer are listed in
``retainer_total_rules``; a reader asking for a rule not kept sums the entries instead
(``totals.day_totals``), so a rule not yet kept is slow, never wrong. The tests' property test
checks these totals against the entries after every step, on both databases.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence

from sqlalchemy import String, delete, func, insert, literal, select
from sqlalchemy.orm import Session

from hourtab.core.accounts import lock_account
from hourtab.retainers.models import retainer_day_totals, retainer_entries, retainer_total_rules
from hourtab.retainers.terms import Rounding, RoundingMode
from hourtab.retainers.totals import rounded_in_sql
from hourtab.timesheets.models import TimeEntry

#: Ids or days per ``IN (...)`` list: well under every backend's parameter limit.
CHUNK = 500

Pair = tuple[int, dt.date]


def held_days(session: Session, entry_ids: Sequence[int]) -> set[Pair]:
    """The (retainer, day) each of these entries counts on now (none for one no retainer holds)."""
    held = retainer_entries
    ids = sorted({int(i) for i in entry_ids})
    found: set[Pair] = set()
    for k in range(0, len(ids), CHUNK):
        found |= {(int(r), _date(d)) for r, d in session.connection().execute(
            select(held.c.retainer_id, held.c.day).distinct().where(held.c.entry_id.in_(ids[k:k + CHUNK])))}
    return found


def _date(value: object) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


def kept_rules(session: Session, retainer_id: int) -> dict[str, Rounding]:
    """The rules whose day totals are kept for the retainer, by key."""
    keys = session.scalars(select(retainer_total_rules.c.rule)
                           .where(retainer_total_rules.c.retainer_id == retainer_id)).all()
    return {key: rule_of(key) for key in keys}


def rule_of(key: str) -> Rounding:
    """The rule ``Rounding.key`` wrote."""
    increment, mode, minimum = key.split("/")
    return Rounding(int(increment), RoundingMode(mode), int(minimum))


def recompute(session: Session, account_id: int, pairs: Iterable[Pair]) -> None:
    """Sum again, from the entries, the day totals of these (retainer, day) pairs under every kept rule."""
    by_retainer: dict[int, set[dt.date]] = defaultdict(set)
    for retainer_id, day in pairs:
        by_retainer[retainer_id].add(day)
    if not by_retainer:
        return
    lock_account(session, account_id)
    for retainer_id, days in sorted(by_retainer.items()):
        rules = kept_rules(session, retainer_id)
        ordered = sorted(days)
        for k in range(0, len(ordered), CHUNK):
            chunk = ordered[k:k + CHUNK]
            session.execute(delete(retainer_day_totals).where(retainer_day_totals.c.retainer_id == retainer_id,
                                                              retainer_day_totals.c.day.in_(chunk)))
            for rule in rules.values():
                _sum_into_table(session, retainer_id, rule, chunk)


def _sum_into_table(session: Session, retainer_id: int, rule: Rounding, days: list[dt.date] | None) -> None:
    """``INSERT … SELECT`` the retainer's day totals under ``rule`` (on ``days``, or on every day)."""
    held, te = retainer_entries, TimeEntry
    summed = (select(held.c.retainer_id, literal(rule.key, String), held.c.day, func.count(),
                     func.sum(rounded_in_sql(te.duration_s, rule)))
              .join(te, te.id == held.c.entry_id)
              .where(held.c.retainer_id == retainer_id, te.status != "removed")
              .group_by(held.c.retainer_id, held.c.day))
    if days is not None:
        summed = summed.where(held.c.day.in_(days))
    session.execute(insert(retainer_day_totals).from_select(["retainer_id", "rule", "day", "entries", "rounded_s"],
                                                            summed))


def keep_rules(session: Session, account_id: int, retainer_id: int, rules: Iterable[Rounding]) -> None:
    """Keep the retainer's day totals under ``rules`` too: each rule not kept yet is summed over its whole
    history once (a new rounding in its terms), then kept by every change."""
    new = {r.key: r for r in rules}.keys() - kept_rules(session, retainer_id).keys()
    if not new:
        return
    lock_account(session, account_id)
    for key in sorted(new):
        session.execute(insert(retainer_total_rules).values(retainer_id=retainer_id, rule=key))
        _sum_into_table(session, retainer_id, rule_of(key), None)


def rebuild(session: Session, account_id: int, retainer_id: int) -> None:
    """Sum every day total of the retainer again (its entries' days all moved: a new time zone)."""
    lock_account(session, account_id)
    session.execute(delete(retainer_day_totals).where(retainer_day_totals.c.retainer_id == retainer_id))
    for rule in kept_rules(session, retainer_id).values():
        _sum_into_table(session, retainer_id, rule, None)
