"""Helpers for the importer tests: the real samples and small synthetic files built in code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import TOGGL_HEADER, make_account, toggl_row
from tests.helpers.paths import DATA

__all__ = ["TOGGL_HEADER", "account", "make_account", "sample", "sample_dir", "toggl_row"]

TRACKERS = DATA / "timetrackers"


def sample(relative: str) -> bytes:
    return (TRACKERS / relative).read_bytes()


def sample_dir() -> Path:
    """The real exports copied into tests/data (provenance beside them)."""
    return TRACKERS


@pytest.fixture
def account(db_session):
    return make_account(db_session, "importer@example.com")
