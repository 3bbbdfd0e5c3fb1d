"""Unassigned work: the account's entries no retainer counts, grouped by client and project.

An entry no retainer's rules match counts nowhere until a rule does. The dashboard says how many
there are; the inbox lists them by client and project, and one action adds a group's client (or
project) to a retainer's rules. That is a rule edit like any other (``service.update_retainer``),
so the adapters run it through ``changes.apply``: previewed where it revises a closed period.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.errors import InvalidInput
from hourtab.retainers import service
from hourtab.retainers.matching import MatchRules, norm
from hourtab.retainers.models import Retainer, retainer_entries
from hourtab.timesheets.models import TimeEntry


@dataclass(frozen=True)
class InboxGroup:
    client: str
    project: str
    entries: int
    seconds: int
    first: dt.date
    last: dt.date


@dataclass(frozen=True)
class Inbox:
    entries: int
    seconds: int
    groups: tuple[InboxGroup, ...] = ()


def _unassigned(account_id: int) -> tuple:
    return (TimeEntry.account_id == account_id, TimeEntry.status != "removed",
            ~exists().where(retainer_entries.c.entry_id == TimeEntry.id))


def inbox_totals(session: Session, account_id: int) -> Inbox:
    """How many entries count nowhere, and their hours (the dashboard's line); one indexed count."""
    count, seconds = session.execute(select(func.count(TimeEntry.id), func.coalesce(func.sum(TimeEntry.duration_s), 0))
                                     .where(*_unassigned(account_id))).one()
    return Inbox(int(count), int(seconds))


def inbox(session: Session, account_id: int) -> Inbox:
    """Every unassigned entry's group (client, project), most hours first."""
    te = TimeEntry
    rows = session.execute(
        select(te.client, te.project, func.count(te.id), func.sum(te.duration_s), func.min(te.local_date),
               func.max(te.local_date))
        .where(*_unassigned(account_id)).group_by(te.client, te.project)).all()
    groups = sorted((InboxGroup(c or "", p or "", int(n), int(s or 0), first, last) for c, p, n, s, first, last in rows),
                    key=lambda g: (-g.seconds, norm(g.client), norm(g.project)))
    return Inbox(sum(g.entries for g in groups), sum(g.seconds for g in groups), tuple(groups))


def rules_with(rules: MatchRules, client: str, project: str) -> MatchRules:
    """``rules`` widened to take the group (``client``, ``project``).

    The client is added to the clients; the project too where the rules name projects (they must
    all hold). A group without a client can join a retainer that names no client only.
    """
    client, project = client.strip(), project.strip()
    if not client and not project:
        raise InvalidInput("These entries carry neither a client nor a project: they count against the retainer "
                           "their import is for. Choose one on the import's page.")
    if not client and rules.clients:
        raise InvalidInput(f"These entries carry no client, and this retainer counts only entries of "
                           f"{' or '.join(rules.clients)}. Create a retainer for the project instead.")
    clients = rules.clients + ((client,) if client and norm(client) not in {norm(c) for c in rules.clients} else ())
    wants_project = project and (rules.projects or not client)
    projects = rules.projects + ((project,) if wants_project and norm(project) not in {norm(p) for p in rules.projects}
                                 else ())
    return MatchRules(clients=clients, projects=projects, tags=rules.tags, billable=rules.billable)


def add_to_rules(session: Session, account: Account, retainer_id: int, client: str, project: str,
                 now: dt.datetime | None = None) -> Retainer:
    """Add a group of unassigned work to an active retainer's rules, and route the entries again."""
    retainer = service.get_retainer(session, account, retainer_id)
    if not retainer.active:
        raise InvalidInput("An archived retainer takes no new entries; make it active first.")
    return service.update_retainer(session, account, retainer_id, rules=rules_with(retainer.rules(), client, project),
                                   now=now)
