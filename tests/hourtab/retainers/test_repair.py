"""Issue 19: the data migration repairs entries a chosen retainer took the old way, visibly.

Rows are written the old way (every entry of an upload "for" a retainer assigned to it), then the
repair runs: once as the function the migration calls, once as the migration itself on a database
at the revision before it, written with plain SQL in that revision's schema.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sqlalchemy import JSON, bindparam, create_engine, delete, insert, select, text
from sqlalchemy.orm import Session

from hourtab.core.db import UTCDateTime, transaction
from hourtab.imports.importer import import_file
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.days import routed_rows
from hourtab.retainers.kept_totals import rebuild
from hourtab.retainers.models import PeriodRevision, Retainer, retainer_entries
from hourtab.retainers.repair import rematch_old_assignments
from hourtab.timesheets.models import TimeEntry
from tests.factories import make_account
from tests.helpers.multi_client import CLOCKIFY, by_client


def _terms():
    return service.parse_terms(service.TermsInput(hours="40", start="2026-01-01"))


def test_repair_routes_old_assignments_by_the_rules_and_marks_the_periods_it_changes(db_session):
    rows = by_client(CLOCKIFY)
    account = make_account(db_session, "ada@example.com", "pro")
    with transaction(db_session):
        baykar = service.create_retainer(db_session, account, "Baykar", "Baykar Teknoloji", _terms())
        zenvo = service.create_retainer(db_session, account, "Zenvo", "Zenvo Automotive", _terms())
        result = import_file(db_session, account, CLOCKIFY.read_bytes(), CLOCKIFY.name, retainer_id=baykar.id)
    # The old way: every entry of the upload counts against the retainer it was imported for.
    with transaction(db_session):
        db_session.execute(delete(retainer_entries))
        ids = db_session.scalars(select(TimeEntry.id).where(TimeEntry.upload_id == result.upload_id)).all()
        held = routed_rows(db_session, list(ids), [baykar.id] * len(ids))
        db_session.execute(insert(retainer_entries), [{"entry_id": e, "retainer_id": r, "day": dt.date.fromisoformat(d)}
                                                      for e, r, d in held])
        for retainer in (baykar, zenvo):  # a database in that state kept its day totals in step with it
            rebuild(db_session, account.id, retainer.id)
    before = ledger_reads.retainer_ledger(db_session, baykar)
    assert len(before.entries) == 42
    with transaction(db_session):
        moved = rematch_old_assignments(db_session)
    lost, gained = 42 - rows["Baykar Teknoloji"].count, rows["Zenvo Automotive"].count  # Zenvo's and BMC's rows
    assert moved == {account.id: lost + gained}
    assert len(service.entries_frame(db_session, baykar.id)) == rows["Baykar Teknoloji"].count
    assert len(service.entries_frame(db_session, zenvo.id)) == rows["Zenvo Automotive"].count
    assert service.unmatched_entries(db_session, account)[0] == rows["BMC Power"].count
    revised = db_session.scalars(select(PeriodRevision).order_by(PeriodRevision.period_start)).all()
    was = {p.period.start: p.used_s for p in before.periods}
    assert [(r.retainer_id, r.period_start, r.reason, r.was_used_s) for r in revised] == [
        (baykar.id, dt.date(2026, m, 1), "migration", was[dt.date(2026, m, 1)]) for m in (1, 2, 3)]
    # Zenvo's page showed nothing before: its history is loaded, not revised.
    with transaction(db_session):
        assert rematch_old_assignments(db_session) == {}  # a second run finds nothing to repair


# --- the migration itself, from the revision before it ---------------------------------------------------


def _revision_before_repair(url: str) -> str:
    from alembic.script import ScriptDirectory

    from app.migrate import alembic_config

    scripts = ScriptDirectory.from_config(alembic_config(url))
    mine = [r for r in scripts.walk_revisions() if "rematch_old_assignments" in Path(r.path).read_text()]
    assert len(mine) == 1
    return mine[0].down_revision




def _old_rows(connection) -> None:
    """An account, two retainers, an upload for the first with both clients' rows, assigned the old way."""
    when = dt.datetime(2026, 1, 2, 8, tzinfo=dt.UTC)

    def run(sql: str, **params):
        types = {k: UTCDateTime() if isinstance(v, dt.datetime) else JSON() for k, v in params.items()
                 if isinstance(v, dt.datetime | dict)}
        connection.execute(text(sql).bindparams(*(bindparam(k, type_=t) for k, t in types.items())), params)

    run("INSERT INTO accounts (id, email, password_hash, plan, display_name, contact, timezone, created_at, "
        "password_changed_at) VALUES (1, 'ada@example.com', '!', 'pro', 'Ada', '', 'UTC', :at, :at)", at=when)
    rules = {1: {"clients": ["Acme"]}, 2: {"clients": ["Globex"]}}
    for rid in (1, 2):
        run("INSERT INTO retainers (id, account_id, name, client, allotment_s, period, reset_day, start_date, timezone, "
            "rollover, overage, rounding_min, rounding_mode, minimum_min, match_rules, active, revision, created_at, "
            "updated_at, public_token) VALUES (:id, 1, :name, :client, 144000, 'monthly', 1, :start, 'UTC', 'none', "
            "'carry', 0, 'up', 0, :rules, :yes, 1, :at, :at, :token)", id=rid, name=f"R{rid}",
            client=rules[rid]["clients"][0], start=dt.date(2026, 1, 1), rules=rules[rid], yes=True, at=when,
            token=f"token{rid}" * 4)
        run("INSERT INTO retainer_terms (retainer_id, account_id, effective_from, allotment_s, rollover, overage, "
            "rounding_min, rounding_mode, minimum_min, created_at) VALUES (:id, 1, :start, 144000, 'none', 'carry', 0, "
            "'up', 0, :at)", id=rid, start=dt.date(2026, 1, 1), at=when)
    run("INSERT INTO uploads (id, account_id, filename, content, size_bytes, sha256, status, format, explanation, "
        "options, created_at, created_by, rows_count, new_count, unchanged_count, changed_count, missing_count, "
        "skipped_count, total_seconds, skipped_rows, warnings, retainer_id) VALUES (1, 1, 'x.csv', :blob, 0, :sha, "
        "'imported', 'toggl', '', '{}', :at, 'ada', 4, 4, 0, 0, 0, 0, 0, '[]', '[]', 1)", blob=b"", sha="0" * 64,
        at=when)
    entries = [(1, "Acme", 5, 3600), (2, "Globex", 6, 7200), (3, "Globex", 20, 1800), (4, "Acme", 21, 900)]
    for eid, client, day, seconds in entries:
        start = dt.datetime(2026, 1 if day < 15 else 2, day, 9, tzinfo=dt.UTC)
        run("INSERT INTO time_entries (id, account_id, upload_id, fingerprint, content_hash, start_at, end_at, "
            "local_date, timezone, duration_s, client, project, task, description, tags, user_name, source_format, "
            "source_line, status, updated_at) VALUES (:id, 1, 1, :fp, '', :start, :end, :day, 'UTC', :s, :client, "
            "'P', '', :desc, '', 'Ada', 'toggl', :id, 'active', :at)", id=eid, fp=f"fp{eid}", start=start,
            end=start + dt.timedelta(seconds=seconds), day=start.date(), s=seconds, client=client,
            desc=f"{client} work", at=when)
        run("INSERT INTO retainer_entries (entry_id, retainer_id) VALUES (:id, 1)", id=eid)  # the old way


def test_the_migration_repairs_rows_written_by_the_previous_schema(empty_url):
    from app.migrate import upgrade

    previous = _revision_before_repair(empty_url)
    upgrade(empty_url, previous)
    engine = create_engine(empty_url)
    with engine.begin() as connection:
        _old_rows(connection)
    engine.dispose()
    upgrade(empty_url)
    engine = create_engine(empty_url)
    try:
        with Session(engine) as session:
            held = dict(session.execute(select(retainer_entries.c.entry_id, retainer_entries.c.retainer_id)).all())
            assert held == {1: 1, 4: 1, 2: 2, 3: 2}
            revised = session.execute(select(PeriodRevision.retainer_id, PeriodRevision.period_start,
                                             PeriodRevision.was_used_s, PeriodRevision.used_s, PeriodRevision.reason)
                                      .order_by(PeriodRevision.period_start)).all()
            assert revised == [(1, dt.date(2026, 1, 1), 3600 + 7200, 3600, "migration"),
                               (1, dt.date(2026, 2, 1), 1800 + 900, 900, "migration")]
            assert session.scalar(select(Retainer.revision).where(Retainer.id == 2)) > 1  # its page changed
    finally:
        engine.dispose()
