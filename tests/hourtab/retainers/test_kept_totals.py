"""The day totals kept beside each retainer: read instead of the entries, filled in by their
migration for existing retainers, and never trusted for a rule they do not keep."""

from __future__ import annotations

import datetime as dt

from alembic import command
from sqlalchemy import delete, func, select

from app.migrate import alembic_config, upgrade
from hourtab.core.db import make_engine, make_sessionmaker, transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.kept_totals import kept_rules
from hourtab.retainers.ledger_inputs import period_starts
from hourtab.retainers.models import retainer_day_totals, retainer_total_rules
from hourtab.retainers.terms import Rounding, RoundingMode
from hourtab.retainers.totals import day_totals, day_totals_of, ledger_of_days, summed_day_totals
from tests.factories import make_account, toggl_csv
from tests.helpers.concurrent_imports import import_at_once
from tests.helpers.paths import DATA

NOW = dt.datetime(2026, 3, 20, 12, tzinfo=dt.UTC)
FLORES = "toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_2017-08-31.csv"
ROWS = [("Acme", "Design", "2026-01-05", "09:00:00", "01:07:00"), ("Acme", "Review", "2026-01-05", "23:30:00", "00:20:00"),
        ("Acme", "Build", "2026-02-11", "10:00:00", "02:00:01"), ("Globex", "Call", "2026-03-02", "08:00:00", "00:31:00")]


def _setup(session, rounding: int = 0):
    account = make_account(session, "kept@example.com", "pro")
    with transaction(session):
        acme = service.create_retainer(session, account, "Acme", "Acme", service.parse_terms(service.TermsInput(
            hours="10", start="2026-01-01", timezone="Asia/Kolkata", rounding=rounding)))
        import_file(session, account, toggl_csv(ROWS), "t.csv")
    return account, acme


def _as_dict(totals, rule) -> dict[str, tuple[int, int]]:
    return {str(d): (int(n), int(s)) for d, n, s in zip(totals.days, totals.entries, totals.rounded_s[rule],
                                                         strict=True)}


def test_the_ledger_reads_a_row_a_day_kept_under_the_terms_rule(db_session):
    account, acme = _setup(db_session, rounding=15)
    rule = Rounding(15, RoundingMode.UP, 0)
    assert set(kept_rules(db_session, acme.id)) == {rule.key}
    rows = db_session.execute(select(retainer_day_totals.c.day, retainer_day_totals.c.entries,
                                     retainer_day_totals.c.rounded_s)
                              .where(retainer_day_totals.c.retainer_id == acme.id)
                              .order_by(retainer_day_totals.c.day)).all()
    # 23:30 UTC on 5 January is the 6th in Kolkata; each entry rounded up to 15 minutes, then summed.
    assert [(str(d), n, s) for d, n, s in rows] == [("2026-01-05", 1, 75 * 60), ("2026-01-06", 1, 30 * 60),
                                                    ("2026-02-11", 1, 135 * 60)]
    ledger = ledger_reads.retainer_ledger(db_session, acme, NOW)
    assert [p.used_s for p in ledger.periods] == [105 * 60, 135 * 60, 0]


def test_a_rule_not_kept_is_summed_from_the_entries_not_read_as_nothing(db_session):
    account, acme = _setup(db_session)
    kept_ledger = ledger_reads.retainer_ledger(db_session, acme, NOW)
    with transaction(db_session):  # as if the rule had never been kept
        db_session.execute(delete(retainer_total_rules).where(retainer_total_rules.c.retainer_id == acme.id))
        db_session.execute(delete(retainer_day_totals).where(retainer_day_totals.c.retainer_id == acme.id))
    assert ledger_reads.retainer_ledger(db_session, acme, NOW).periods == kept_ledger.periods
    assert sum(p.used_s for p in kept_ledger.periods) == (67 + 20 + 120) * 60 + 1


def test_a_new_rounding_is_summed_over_the_whole_history_when_the_terms_take_it(db_session):
    account, acme = _setup(db_session)
    with transaction(db_session):
        service.update_retainer(db_session, account, acme.id, now=NOW, terms=service.parse_terms(service.TermsInput(
            hours="10", start="2026-01-01", timezone="Asia/Kolkata", rounding=30)), effective_from=NOW.date())
    rules = [Rounding(0, RoundingMode.UP, 0), Rounding(30, RoundingMode.UP, 0)]
    assert set(kept_rules(db_session, acme.id)) == {r.key for r in rules}
    kept, summed = day_totals(db_session, acme.id, rules), summed_day_totals(db_session, acme.id, rules)
    assert _as_dict(kept, rules[1]) == _as_dict(summed, rules[1]) == {
        "2026-01-05": (1, 90 * 60), "2026-01-06": (1, 30 * 60), "2026-02-11": (1, 150 * 60)}


def test_the_migration_fills_in_the_totals_of_existing_retainers(database_url):
    engine = make_engine(database_url)
    session = make_sessionmaker(engine)()
    try:
        account, acme = _setup(session, rounding=6)
        rule = Rounding(6, RoundingMode.UP, 0)
        before = _as_dict(day_totals(session, acme.id, [rule]), rule)
        session.close()
        command.downgrade(alembic_config(database_url), "0021t")  # the schema before kept totals
        upgrade(database_url)
        session = make_sessionmaker(engine)()
        assert set(kept_rules(session, acme.id)) == {rule.key}
        assert _as_dict(day_totals(session, acme.id, [rule]), rule) == before
        assert _as_dict(summed_day_totals(session, acme.id, [rule]), rule) == before
        assert session.scalar(select(func.count()).select_from(retainer_day_totals)) == 3
    finally:
        session.close()
        engine.dispose()


def test_closed_periods_come_folded_into_a_row_each_and_the_ledger_is_the_same(db_session):
    account = make_account(db_session, "weekly@example.com", "pro")
    rows = [("Acme", f"task {k}", (dt.date(2026, 1, 1) + dt.timedelta(days=k)).isoformat(), "10:00:00", "00:45:00")
            for k in range(0, 70, 2)]
    with transaction(db_session):
        acme = service.create_retainer(db_session, account, "Acme", "Acme", service.parse_terms(service.TermsInput(
            hours="3", start="2026-01-01", period="weekly", reset_day=3, rounding=15)))
        import_file(db_session, account, toggl_csv(rows), "t.csv")
    rule = acme.terms().rounding
    starts = period_starts(acme.terms(), NOW)
    folded = day_totals_of(db_session, {acme.id: ([rule], None)}, {acme.id: starts})[acme.id]
    by_day = day_totals(db_session, acme.id, [rule])
    # 35 days with entries; before the current week's start each week is one row on its first day.
    assert len(by_day.days) == 35 and set(folded.days[:-1].tolist()) <= set(starts)
    assert len(folded.days) < 15 and folded.count == by_day.count == 35
    terms = acme.terms()
    same = [ledger_of_days(terms, t, as_of=NOW).periods for t in (folded, by_day)]
    assert same[0] == same[1] and sum(p.used_s for p in same[0]) == 35 * 45 * 60


def test_two_imports_at_once_into_one_account_leave_totals_equal_to_the_entries(database_url, db_session):
    """Each import recounts its days under the account's lock, so the second recounts after the first commits."""
    lines = (DATA / "timetrackers" / FLORES).read_text().splitlines(keepends=True)
    # Interleaved rows: both files bring entries on the same days, so both recount the same days.
    halves = ["".join(lines[:1] + lines[part]).encode() for part in (slice(1, None, 2), slice(2, None, 2))]
    account = make_account(db_session, "both@example.com", "pro")
    with transaction(db_session):
        retainers = [service.create_retainer(db_session, account, c, c, service.parse_terms(
            service.TermsInput(hours="40", start="2017-07-15", reset_day=15))) for c in ("Client 1", "Client 2")]
    outcomes = import_at_once(database_url, account, halves)
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    db_session.expire_all()
    rule = Rounding()
    days = {r.id: _as_dict(day_totals(db_session, r.id, [rule]), rule) for r in retainers}
    assert days == {r.id: _as_dict(summed_day_totals(db_session, r.id, [rule]), rule) for r in retainers}
    assert sum(n for d in days.values() for n, _ in d.values()) == 217
