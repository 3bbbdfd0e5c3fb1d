"""Importer fixtures: an account, as the readers' tests have."""

from __future__ import annotations

import pytest

from tests.factories import make_account


@pytest.fixture
def account(db_session):
    return make_account(db_session, "importer@example.com")
