"""The postmortem columns reach incidents written before them, on both databases, and go back out cleanly."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sqlalchemy import bindparam, create_engine, inspect, select, text
from sqlalchemy.orm import Session

from hourtab.core.db import UTCDateTime
from incidents.writeups.models import Incident


def _revision_before(url: str) -> str:
    from alembic.script import ScriptDirectory

    from app.migrate import alembic_config

    scripts = ScriptDirectory.from_config(alembic_config(url))
    mine = [r for r in scripts.walk_revisions() if Path(r.path).name == "0017_incident_postmortem.py"]
    assert len(mine) == 1
    return mine[0].down_revision


def test_an_incident_written_before_the_postmortem_columns_reads_back_ungraded(empty_url):
    from app.migrate import alembic_config, upgrade

    before = _revision_before(empty_url)
    upgrade(empty_url, before)
    engine = create_engine(empty_url)
    when = dt.datetime(2026, 1, 2, 8, tzinfo=dt.UTC)
    with engine.begin() as c:
        at = bindparam("at", type_=UTCDateTime())
        c.execute(text("INSERT INTO accounts (id, email, password_hash, plan, display_name, contact, timezone, "
                       "created_at, password_changed_at) VALUES (1, 'ada@example.com', '!', 'pro', 'Ada', '', 'UTC', "
                       ":at, :at)").bindparams(at), {"at": when})
        c.execute(text("INSERT INTO incidents (id, account_id, title, slug, status, environment, sections, fix_before, "
                       "fix_after, log_entry, log_entry_edited, revision, created_at, updated_at) VALUES (1, 1, "
                       "'Slow', 'slow', 'published', '', '{}', '', '', 'Entry.', :no, 3, :at, :at)").bindparams(at),
                  {"at": when, "no": False})
    engine.dispose()
    upgrade(empty_url)
    engine = create_engine(empty_url)
    try:
        with Session(engine) as session:
            row = session.scalars(select(Incident)).one()
            assert (row.severity, row.incident_status, row.price_currency, row.gpu_hour_price) == ("", "", "USD", None)
            assert row.began_at is None and row.resolved_at is None and row.log_entry == "Entry."
        from alembic import command

        command.downgrade(alembic_config(empty_url), before)
        columns = {c["name"] for c in inspect(engine).get_columns("incidents")}
        assert "severity" not in columns and "gpu_hour_price" not in columns and "log_entry" in columns
    finally:
        engine.dispose()
