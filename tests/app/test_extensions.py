"""What an app builds once (app/extensions.py) and what the CLI gets instead of an app."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from app import create_app
from app.cli import cli
from app.extensions import PageCache
from hourtab.core.blobs import LocalBlobStore


def test_each_app_builds_its_own_blobs_and_page_cache(tmp_path):
    first = create_app({"HOURTAB_DATA_DIR": str(tmp_path / "a")})
    second = create_app({"HOURTAB_DATA_DIR": str(tmp_path / "b")})
    for app, folder in ((first, "a"), (second, "b")):
        assert isinstance(app.extensions["hourtab.page_cache"], PageCache)
        blobs = app.extensions["hourtab.blobs"]
        assert isinstance(blobs, LocalBlobStore) and Path(blobs.root).is_relative_to(tmp_path / folder)
    assert first.extensions["hourtab.page_cache"] is not second.extensions["hourtab.page_cache"]
    with first.app_context():
        from app.extensions import blobs, page_cache

        assert blobs() is first.extensions["hourtab.blobs"]
        assert page_cache() is first.extensions["hourtab.page_cache"]
    for app in (first, second):
        app.extensions["hourtab.engine"].dispose()


def test_cli_refuses_an_unmigrated_database_and_does_not_migrate_it(tmp_path):
    env = {"HOURTAB_DATA_DIR": str(tmp_path), "HOURTAB_DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.db'}"}
    result = CliRunner().invoke(cli, ["ledger", "1"], env=env)
    assert result.exit_code == 1
    assert result.stderr == "Error: The database schema is not up to date; run `hourtab db upgrade` first.\n"
    assert CliRunner().invoke(cli, ["db", "upgrade"], env=env).exit_code == 0
    assert CliRunner().invoke(cli, ["ledger", "1"], env=env).exit_code == 2  # migrated: now a missing id
