"""``hourtab import --retainer`` records an upload only against the importing account's own retainer."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from app.cli import cli
from hourtab.core.db import make_engine, make_sessionmaker, transaction
from hourtab.timesheets.models import Upload
from tests.helpers.hours import SAMPLE, setup_retainer


@pytest.fixture
def env(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    engine = make_engine(database_url)
    session = make_sessionmaker(engine)()
    _, theirs = setup_retainer(session, email="other@example.com")
    with transaction(session):
        from hourtab.core import accounts

        session.add(accounts.Account(email="ada@example.com", password_hash="!", plan="pro"))
    mine = _own_retainer(session)
    yield {"theirs": theirs.id, "mine": mine, "session": session}
    session.close()
    engine.dispose()


def _own_retainer(session) -> int:
    from hourtab.core import accounts
    from hourtab.retainers import service

    with transaction(session):
        ada = accounts.find_account(session, "ada@example.com")
        r = service.create_retainer(session, ada, "Mine", "Client 1",
                                    service.parse_terms(service.TermsInput(hours="10", start="2017-08-01")))
    return r.id


def _uploads(session) -> int:
    session.rollback()
    return session.scalar(select(func.count(Upload.id)).where(Upload.status == "imported"))


def _import(retainer: str, *extra: str):
    return CliRunner().invoke(cli, ["import", str(SAMPLE), "--account", "ada@example.com", "--retainer", retainer,
                                    *extra])


@pytest.mark.parametrize("which", ["theirs", "missing", "huge"])
def test_another_accounts_or_a_missing_retainer_is_refused(env, which):
    before = _uploads(env["session"])
    retainer = {"theirs": str(env["theirs"]), "missing": "987654", "huge": str(2**70)}[which]
    r = _import(retainer)
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and f"No retainer {retainer}" in lines[0]
    assert _uploads(env["session"]) == before
    r = _import(retainer, "--dry-run")
    assert r.exit_code == 2, r.output


def test_ones_own_retainer_is_recorded(env):
    r = _import(str(env["mine"]))
    assert r.exit_code == 0, r.output
    session = env["session"]
    session.rollback()
    assert session.scalar(select(func.count(Upload.id)).where(Upload.retainer_id == env["mine"])) == 1
