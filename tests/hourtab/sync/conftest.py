"""Sync fixtures: a token box and an account in the retainer's zone (the helpers: ``tests/helpers/sync_runs.py``)."""

from __future__ import annotations

import pytest

from hourtab.sync.token_box import TokenBox
from tests.factories import make_account
from tests.helpers.sync_runs import ZONE


@pytest.fixture
def box() -> TokenBox:
    return TokenBox.from_settings("", "a secret key for the tests")


@pytest.fixture
def account(db_session):
    return make_account(db_session, "sync@example.com", timezone=ZONE.key)
