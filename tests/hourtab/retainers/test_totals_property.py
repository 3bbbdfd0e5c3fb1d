"""The ledger from day totals equals the ledger from the entries, to the second, after every change.

Random sequences of imports (new entries, edited ones, ones missing from a later file), removals,
restores, terms changes (rounding, time zone, hours) and match-rule changes (entries moving) run
through the real services on SQLite and PostgreSQL; after each step every retainer's ledger is read both ways and compared period by
period, and the day totals kept beside them are checked against the entries summed per day.
``build_ledger`` over the entries (``tests.helpers.ledger_oracle``) is the from-scratch check
and nothing else.
"""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.imports.removal import confirm_removal, restore_removed
from hourtab.retainers import credits, ledger_reads, service
from hourtab.retainers.kept_totals import kept_rules
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.revisions import ledger_now
from hourtab.retainers.totals import day_totals, schedule_roundings, summed_day_totals
from hourtab.retainers.versions import terms_schedule
from tests.factories import make_account, toggl_csv
from tests.helpers.ledger_oracle import build_ledger

NOW = dt.datetime(2026, 6, 10, 12, tzinfo=dt.UTC)
START = dt.date(2026, 1, 1)
CLIENTS = ("Acme", "Globex", "Initech")  # the third matches no retainer
ZONES = ("UTC", "America/New_York", "Asia/Kolkata")
accounts = itertools.count()

row_st = st.tuples(st.sampled_from(CLIENTS), st.integers(0, 3), st.integers(0, 160), st.integers(0, 23),
                   st.integers(0, 5 * 3600))
terms_st = st.tuples(st.sampled_from([0, 6, 15]), st.sampled_from(["up", "nearest"]), st.sampled_from([0, 15]),
                     st.sampled_from(ZONES), st.integers(5, 40), st.booleans())
step_st = st.one_of(
    st.tuples(st.just("import"), st.lists(row_st, min_size=1, max_size=12)),
    st.tuples(st.just("remove"), st.none()),
    st.tuples(st.just("restore"), st.none()),
    st.tuples(st.just("terms"), st.tuples(st.sampled_from([0, 1]), terms_st)),
    st.tuples(st.just("rules"), st.tuples(st.sampled_from([0, 1]), st.sets(st.sampled_from(CLIENTS), min_size=1))),
)


def _csv(rows) -> bytes:
    lines = []
    for client, desc, day, hour, seconds in rows:
        on = START + dt.timedelta(days=day)
        lines.append((client, f"task {desc}", on.isoformat(), f"{hour:02d}:00:00",
                      f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"))
    return toggl_csv(lines)


def _terms(rounding: int, mode: str, minimum: int, zone: str, hours: int):
    return service.parse_terms(service.TermsInput(hours=str(hours), start=START, timezone=zone, rounding=rounding,
                                                  rounding_mode=mode, minimum=minimum, rollover="cap",
                                                  rollover_cap="10"))


def _step(session, account, retainers, uploads, kind, arg) -> None:
    with transaction(session):
        if kind == "import":
            uploads.append(import_file(session, account, _csv(arg), "t.csv").upload_id)
        elif kind == "remove":
            confirm_removal(session, account)
        elif kind == "restore" and uploads:
            restore_removed(session, account, uploads[-1])
        elif kind == "terms":
            which, (rounding, mode, minimum, zone, hours, from_now) = arg
            service.update_retainer(session, account, retainers[which].id, now=NOW,
                                    terms=_terms(rounding, mode, minimum, zone, hours),
                                    effective_from=NOW.date() if from_now else None)
        elif kind == "rules":  # entries move between the retainers, or to none
            which, clients = arg
            service.update_retainer(session, account, retainers[which].id, now=NOW,
                                    rules=MatchRules(clients=tuple(sorted(clients))))


def _same_ledgers(session, retainers) -> None:
    """The totals' ledger (as the preview and the watch read it, and as the pages read it, with the
    entries they list) against the ledger computed from scratch over every entry."""
    for retainer in retainers:
        from_entries = build_ledger(retainer.terms(), service.entries_frame(session, retainer.id, text=False),
                                    credits.credits_of(session, retainer), as_of=NOW,
                                    schedule=terms_schedule(session, retainer))
        shown = ledger_reads.retainer_ledger(session, retainer, NOW, text=False)
        for from_totals in (ledger_now(session, retainer.id, NOW), shown):
            assert from_totals.periods == from_entries.periods, retainer.name
            assert from_totals.current_index == from_entries.current_index
        listed = ["entry_id", "period", "rounded_s", "day"]
        assert shown.entries[listed].reset_index(drop=True).equals(from_entries.entries[listed].reset_index(drop=True))
        assert shown.before_count == len(from_entries.before_start)
        _kept_totals_are_the_entries_sums(session, retainer)


def _kept_totals_are_the_entries_sums(session, retainer) -> None:
    """The ledgers above were read from the kept day totals (every rule of the terms is kept), and
    those equal the entries summed per day this very moment."""
    rules = schedule_roundings(retainer.terms(), terms_schedule(session, retainer))
    assert {r.key for r in rules} <= set(kept_rules(session, retainer.id))
    kept, summed = day_totals(session, retainer.id, rules), summed_day_totals(session, retainer.id, rules)
    order = np.argsort(summed.days, kind="stable")
    assert kept.days.tolist() == summed.days[order].tolist()
    assert kept.entries.tolist() == summed.entries[order].tolist()
    for rule in rules:
        assert kept.rounded_s[rule].tolist() == summed.rounded_s[rule][order].tolist(), rule


# No shrinking: each example is a few database transactions, and the failing steps are printed as they are.
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(first=terms_st, steps=st.lists(step_st, min_size=1, max_size=6))
def test_totals_ledger_equals_the_ledger_of_the_entries_after_every_change(db_session, first, steps):
    account = make_account(db_session, f"p{next(accounts)}@example.com", "pro")
    with transaction(db_session):
        retainers = [service.create_retainer(db_session, account, name, name, _terms(*first[:5]))
                     for name in CLIENTS[:2]]
    uploads: list[int] = []
    for kind, arg in steps:
        _step(db_session, account, retainers, uploads, kind, arg)
        _same_ledgers(db_session, retainers)
