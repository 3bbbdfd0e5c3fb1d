"""Issue 28: edits never destroy history, on a real Toggl export whose clients are "Last, First".

Rules are lists of exact names ("Panageas, Kathy" is one client); a change that revises a closed
period is previewed by running it in a savepoint and kept only when confirmed; revisions are
recorded both ways, so each closed period's last revision states the figure it shows; and rules
saved split on commas by the old form are joined back, as the data migration does.
"""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select, update

from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import changes, ledger_reads, service
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import PeriodRevision, Retainer
from hourtab.retainers.repair import rejoin, repair_split_rules
from hourtab.retainers.revisions import closed, revisions_of
from tests.factories import make_account
from tests.helpers.lavery_export import KATHY, LAVERY, NOW, ROWS, SEAN

#: Tests whose subject the other database cannot change (the web tests run the names on both).
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def lavery(session) -> tuple:
    """An account with the export imported and a retainer for "Panageas, Kathy" (New York time)."""
    # In New York, as the export's author was: its clock times are read in the account's zone.
    account = make_account(session, "jessica@example.com", timezone="America/New_York")
    with transaction(session):
        retainer = service.create_retainer(session, account, "Methods comparison", KATHY, service.parse_terms(
            service.TermsInput(hours="20", start="2019-03-01", timezone="America/New_York")))
        import_file(session, account, LAVERY.read_bytes(), LAVERY.name)
    return account, retainer


def figures(session, retainer) -> dict[dt.date, tuple[int, int]]:
    return closed(ledger_reads.retainer_ledger(session, retainer, NOW))


def assert_last_revisions_state_the_figures(session, retainer) -> None:
    """Every revised closed period's last revision says what the period shows now (0 when it is none)."""
    shown = figures(session, retainer)
    last = {start: revs[-1] for start, revs in revisions_of(session, retainer).items()}
    assert last, "no revision to check"
    assert {s: (r.used_s, r.entries) for s, r in last.items()} == {s: shown.get(s, (0, 0)) for s in last}


def edit(session, account, retainer, confirm=None, **changes_):
    with transaction(session):
        return changes.apply(session, account.id, lambda: service.update_retainer(
            session, account, retainer.id, now=NOW, **changes_), confirm=confirm)[1]


@SQLITE_ONLY
def test_a_comma_in_a_name_is_part_of_the_name_and_two_such_clients_count_both(db_session):
    account, retainer = lavery(db_session)
    before = figures(db_session, retainer)
    assert sum(n for _, n in before.values()) == ROWS[KATHY] and len(before) == 12
    assert retainer.rules().describe() == "client “Panageas, Kathy”"
    edit(db_session, account, retainer, confirm=True, rules=MatchRules(clients=(KATHY, SEAN)))
    db_session.expire_all()
    assert MatchRules.from_json(db_session.get(Retainer, retainer.id).match_rules).clients == (KATHY, SEAN)
    assert len(ledger_reads.retainer_ledger(db_session, retainer, NOW).entries) == ROWS[KATHY] + ROWS[SEAN]


def test_an_edit_that_revises_closed_periods_changes_nothing_until_confirmed_and_revises_both_ways(db_session):
    account, retainer = lavery(db_session)
    before = figures(db_session, retainer)
    split = MatchRules(clients=("Panageas", "Kathy"))   # what the old form saved
    with pytest.raises(changes.NeedsConfirmation) as refused:
        edit(db_session, account, retainer, rules=split)
    preview = refused.value.preview
    assert [(m.source, m.target, m.entries) for m in preview.moves] == [(retainer.id, changes.UNASSIGNED, 78)]
    assert {p.start: (p.was, p.now) for p in preview.periods} == {s: (f, (0, 0)) for s, f in before.items() if f[1]}
    assert "Methods comparison, May 2019 (closed): 41.75 h → 0 h used (19 → 0 entries)" in preview.lines()
    db_session.expire_all()
    assert figures(db_session, retainer) == before and db_session.get(Retainer, retainer.id).match_rules["clients"] \
        == [KATHY]
    assert db_session.scalar(select(func.count(PeriodRevision.id))) == 0
    with pytest.raises(changes.NeedsConfirmation, match="differs from the preview"):
        edit(db_session, account, retainer, rules=split, confirm="0" * 20)      # a stale confirmation
    applied = edit(db_session, account, retainer, rules=split, confirm=preview.digest)
    assert applied.digest == preview.digest and sum(n for _, n in figures(db_session, retainer).values()) == 0
    restored = edit(db_session, account, retainer, rules=MatchRules(clients=(KATHY,)), confirm=True)
    assert figures(db_session, retainer) == before
    assert {p.start: p.now for p in restored.periods} == {s: f for s, f in before.items() if f[1]}
    assert_last_revisions_state_the_figures(db_session, retainer)


@SQLITE_ONLY
def test_hours_alone_save_at_once_and_a_new_time_zone_is_previewed(db_session):
    account, retainer = lavery(db_session)
    before = figures(db_session, retainer)
    terms = service.parse_terms(service.TermsInput(hours="25", start="2019-03-01", timezone="America/New_York"))
    saved = edit(db_session, account, retainer, terms=terms, rules=MatchRules(clients=(KATHY,)))
    assert not saved.touches_closed and saved.moves == () and figures(db_session, retainer) == before
    # The period structure applies to the whole history: Kiribati's clock puts an evening in New York
    # on the next day, so month-end entries change months.
    far = service.parse_terms(service.TermsInput(hours="25", start="2019-03-01", timezone="Pacific/Kiritimati"))
    with pytest.raises(changes.NeedsConfirmation) as refused:
        edit(db_session, account, retainer, terms=far)
    assert refused.value.preview.periods and figures(db_session, retainer) == before
    edit(db_session, account, retainer, terms=far, confirm=refused.value.preview.digest)
    assert figures(db_session, retainer) != before
    edit(db_session, account, retainer, terms=terms, confirm=True)
    assert figures(db_session, retainer) == before
    assert_last_revisions_state_the_figures(db_session, retainer)


@SQLITE_ONLY
def test_hours_rounding_or_a_name_never_move_a_closed_period_and_rounding_is_refused_on_one(db_session):
    account, retainer = lavery(db_session)
    before = figures(db_session, retainer)
    rounded = service.parse_terms(service.TermsInput(hours="30", start="2019-03-01", timezone="America/New_York",
                                                     rounding=30))
    saved = edit(db_session, account, retainer, terms=rounded, name="Methods, renamed")
    assert not saved.touches_closed and figures(db_session, retainer) == before
    assert db_session.scalar(select(func.count(PeriodRevision.id))) == 0
    with pytest.raises(service.InvalidTerms, match="closed and keeps the terms it closed with"):
        edit(db_session, account, retainer, terms=rounded, effective_from=dt.date(2019, 3, 1))
    ledger = ledger_reads.retainer_ledger(db_session, retainer, NOW)
    assert ledger.terms.rounding == rounded.rounding  # from the open period on


def test_rejoin_joins_only_parts_that_match_no_name_when_the_whole_does():
    known = [KATHY, SEAN, "Acme, Inc.", "Acme", "Biostats"]
    assert rejoin(["Panageas", "Kathy"], known) == (KATHY,)
    assert rejoin(["Panageas", "Kathy", "Devlin", "Sean", "Biostats"], known) == (KATHY, SEAN, "Biostats")
    assert rejoin(["panageas", " kathy"], known) == (KATHY,)                # spelled as the entries spell it
    assert rejoin(["Acme", "Inc."], known) == ("Acme", "Inc.")             # "Acme" is a client of its own
    assert rejoin(["Nobody", "Else"], known) == ("Nobody", "Else")


def test_the_repair_joins_split_rules_back_and_revises_the_periods_up(db_session):
    account, retainer = lavery(db_session)
    before = figures(db_session, retainer)
    # The old form's save: the rule split on its comma, the retainer emptied, its periods revised to 0.
    edit(db_session, account, retainer, rules=MatchRules(clients=("Panageas", "Kathy"), projects=()), confirm=True)
    with transaction(db_session):
        fixed = repair_split_rules(db_session, now=NOW)
    assert fixed == {retainer.id: {"clients": [KATHY], "projects": [], "tags": [], "billable": None}}
    db_session.expire_all()
    assert figures(db_session, retainer) == before
    reasons = db_session.scalars(select(PeriodRevision.reason).order_by(PeriodRevision.id)).all()
    assert reasons == ["rules"] * 11 + ["migration"] * 11
    assert_last_revisions_state_the_figures(db_session, retainer)
    with transaction(db_session):
        assert repair_split_rules(db_session, now=NOW) == {}                      # nothing left to join


def _back_to_before_the_repair(url: str) -> None:
    """Step the schema back to just before the repair, keeping the rows written at the head.

    The rows are written by today's services on today's schema (later migrations may add columns
    today's models read); stepping back undoes those later migrations, so upgrading again runs the
    repair on the rows exactly as it would on a database that never saw it.
    """
    from alembic import command
    from alembic.script import ScriptDirectory

    from app.migrate import alembic_config

    config = alembic_config(url)
    parent = ScriptDirectory.from_config(config).get_revision("0017e").down_revision
    command.downgrade(config, parent)


def test_the_migration_repairs_a_rule_saved_the_old_way(empty_url):
    """The rows the old form left, written by the services on the schema before the repair runs."""
    from app.migrate import upgrade
    from hourtab.core.db import make_engine, make_sessionmaker

    upgrade(empty_url)
    engine = make_engine(empty_url)
    try:
        session = make_sessionmaker(engine)()
        account, retainer = lavery(session)
        before = figures(session, retainer)
        with transaction(session):   # as the old form stored it, without going through today's services
            session.execute(update(Retainer).where(Retainer.id == retainer.id)
                            .values(match_rules={"clients": ["Panageas", "Kathy"], "projects": [], "tags": []}))
            service.match_entries(session, account.id)
        assert sum(n for _, n in figures(session, retainer).values()) == 0
        session.close()
        _back_to_before_the_repair(empty_url)
        upgrade(empty_url)
        session = make_sessionmaker(engine)()
        retainer = session.get(Retainer, retainer.id)
        assert retainer.match_rules["clients"] == [KATHY] and figures(session, retainer) == before
        assert_last_revisions_state_the_figures(session, retainer)
        session.close()
    finally:
        engine.dispose()
