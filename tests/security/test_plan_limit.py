"""The plan's active-retainer limit holds when many creations arrive at once."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from hourtab.retainers.models import Retainer
from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.forms import PASSWORD, signup
from tests.helpers.http_sessions import at_once, logged_in_session, token_of
from tests.helpers.servers import serve


def _active(app) -> int:
    with app.app_context():
        from app.db import get_db

        return get_db().scalar(select(func.count(Retainer.id)).where(Retainer.active.is_(True)))


@pytest.mark.parametrize("n", [8])
def test_simultaneous_creations_on_a_free_account_make_one_retainer(app, n):
    signup(app.test_client())
    with serve(app) as base:
        def prepare(i: int):
            s = logged_in_session(base, "consultant@example.com", PASSWORD)
            token = token_of(s.get(f"{base}/retainers/new", timeout=30).text)

            def post():
                return s.post(f"{base}/retainers/new", data={**FORM, "name": f"R{i}", "csrf_token": token},
                              allow_redirects=False, timeout=120).status_code
            return post

        statuses = at_once(n, prepare)
    assert _active(app) == 1, statuses
    assert statuses.count(302) == 1 and set(statuses) <= {302, 403}, statuses
