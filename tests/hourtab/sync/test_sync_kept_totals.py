"""A tracker sync keeps the retainers' day totals true: new, edited, deleted and moved entries, each
recounted on its own days, equal the entries summed from scratch after every sync."""

from __future__ import annotations

import datetime as dt

from hourtab.core.db import transaction
from hourtab.retainers.totals import day_totals, summed_day_totals
from hourtab.sync import service
from tests.helpers.fake_trackers import Toggl, iso, serving
from tests.helpers.sync_runs import TOKEN, at, make_retainer, months, run_sync


def _kept_equals_summed(session, retainer) -> dict:
    session.expire_all()
    rules = [retainer.terms().rounding]
    kept, summed = day_totals(session, retainer.id, rules), summed_day_totals(session, retainer.id, rules)
    as_dict = [{str(d): (int(n), int(s)) for d, n, s in zip(t.days, t.entries, t.rounded_s[rules[0]], strict=True)}
               for t in (kept, summed)]
    assert as_dict[0] == as_dict[1]
    return as_dict[0]


def test_each_sync_recounts_the_days_it_touched(db_session, account, box):
    previous, current = months()
    acme, globex = make_retainer(db_session, account, "Acme GmbH"), make_retainer(db_session, account, "Globex")
    fake = Toggl(TOKEN)
    first = fake.add(at(previous, 9), 3600, "Design")               # Acme (project 0)
    second = fake.add(at(previous + dt.timedelta(days=3), 22, 30), 5400, "Review", project=1)  # Globex, late evening
    third = fake.add(at(current, 10), 1800, "Call")
    with serving(toggl=fake) as trackers:
        with transaction(db_session):
            connection = service.connect(db_session, account, box, "toggl", TOKEN, api_url=trackers.url)
        run_sync(db_session, connection.id, box)
        assert sum(n for n, _ in _kept_equals_summed(db_session, acme).values()) == 2
        assert sum(n for n, _ in _kept_equals_summed(db_session, globex).values()) == 1
        fake.edit(first, duration=7200)                             # longer, same day
        fake.edit(second, start=iso(at(previous + dt.timedelta(days=4), 9)), duration=5400)  # the next day
        fake.edit(third, project_id=fake.projects[1]["id"], pid=fake.projects[1]["id"])  # moves to Globex
        fake.delete(fake.add(at(current, 11), 600, "Oops"))
        run_sync(db_session, connection.id, box)
    acme_days, globex_days = _kept_equals_summed(db_session, acme), _kept_equals_summed(db_session, globex)
    assert acme_days == {previous.isoformat(): (1, 7200)}
    assert globex_days == {(previous + dt.timedelta(days=4)).isoformat(): (1, 5400), current.isoformat(): (1, 1800)}
