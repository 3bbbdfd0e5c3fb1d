"""Retainer services on both databases: plan limits, matching, one retainer per entry, revisions."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select

from hourtab.core.db import transaction
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.imports.importer import import_file
from hourtab.retainers import credits, ledger_reads, service
from hourtab.retainers.assign import route_entries
from hourtab.retainers.errors import PlanLimitReached
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import retainer_entries
from tests.helpers.hours import SAMPLE, setup_retainer, toggl_csv


def _terms(hours="20", start="2017-08-01"):
    return service.parse_terms(service.TermsInput(hours=hours, start=start))


def test_free_plan_refuses_a_second_active_retainer_and_pro_allows_ten(db_session):
    account, first = setup_retainer(db_session)
    with pytest.raises(PlanLimitReached, match=r"The free plan keeps 1 active retainer.*upgrade to the pro plan.*Plan page"):
        with transaction(db_session):
            service.create_retainer(db_session, account, "Second", "Client 2", _terms())
    with transaction(db_session):
        service.set_active(db_session, account, first.id, False)
        service.create_retainer(db_session, account, "Second", "Client 2", _terms())
    with pytest.raises(PlanLimitReached):
        with transaction(db_session):
            service.set_active(db_session, account, first.id, True)
    with transaction(db_session):
        account.plan = "pro"
        for i in range(9):
            service.create_retainer(db_session, account, f"R{i}", f"C{i}", _terms())
    with pytest.raises(PlanLimitReached, match="pro plan keeps 10 active retainers"):
        service.create_retainer(db_session, account, "Eleventh", "C", _terms())


def test_each_entry_counts_against_one_retainer_oldest_rule_wins(db_session):
    account, first = setup_retainer(db_session, plan="pro")
    with transaction(db_session):
        # Also matches "Client 1" entries, but they already belong to the first retainer.
        second = service.create_retainer(db_session, account, "Both", "Client 1",
                                         _terms(), MatchRules(clients=("client 1", "CLIENT 2")))
    counts = dict(db_session.execute(select(retainer_entries.c.retainer_id, func.count())
                                     .group_by(retainer_entries.c.retainer_id)).all())
    assert counts == {first.id: 168, second.id: 49}
    assert service.unmatched_entries(db_session, account)[0] == 0


def test_upload_for_a_chosen_retainer_does_not_take_another_clients_entry(db_session):
    """Issue 19: choosing a retainer for an upload no longer sends every row of the file there."""
    account, first = setup_retainer(db_session, plan="pro")
    with transaction(db_session):
        other = service.create_retainer(db_session, account, "Other", "Nobody", _terms())
        import_file(db_session, account, toggl_csv([("Client 1", "extra", "2017-08-30", "09:00:00", "01:00:00")]),
                    "x.csv", retainer_id=other.id)
    assert len(service.entries_frame(db_session, other.id)) == 0
    assert "extra" in set(service.entries_frame(db_session, first.id)["description"])


def test_rule_change_rematches_and_bumps_revision(db_session):
    account, retainer = setup_retainer(db_session)
    rev = retainer.revision
    with transaction(db_session):
        service.update_retainer(db_session, account, retainer.id, rules=MatchRules(clients=("Client 2",)))
    assert len(service.entries_frame(db_session, retainer.id)) == 49
    assert retainer.revision > rev


def test_import_assigns_entries_in_its_own_transaction_and_bumps_only_this_account(db_session):
    account, retainer = setup_retainer(db_session)
    other, theirs = setup_retainer(db_session, email="bob@example.com")
    before = len(service.entries_frame(db_session, retainer.id))
    rev, their_rev = retainer.revision, theirs.revision
    with transaction(db_session):
        import_file(db_session, account, toggl_csv([("Client 1", "new", "2017-08-31", "09:00:00", "00:10:00")]),
                    "y.csv")
    assert len(service.entries_frame(db_session, retainer.id)) == before + 1
    assert retainer.revision > rev
    db_session.refresh(theirs)
    assert theirs.revision == their_rev
    with transaction(db_session):
        assert route_entries(db_session, account.id).moved == 0  # already where the rules send them


def test_reactivating_a_retainer_assigns_what_arrived_while_it_was_archived(db_session):
    account, retainer = setup_retainer(db_session)
    others = service.unmatched_entries(db_session, account)[0]  # another client's entries
    with transaction(db_session):
        service.set_active(db_session, account, retainer.id, False)
        import_file(db_session, account, toggl_csv([("Client 1", "late", "2017-08-31", "09:00:00", "00:10:00")]),
                    "z.csv")
    assert service.unmatched_entries(db_session, account)[0] == others + 1
    with transaction(db_session):
        service.set_active(db_session, account, retainer.id, True)
    assert service.unmatched_entries(db_session, account)[0] == others


def test_credits_need_reasons_and_sensible_hours(db_session):
    account, retainer = setup_retainer(db_session)
    for kind, hours, reason, words in [("topup", "-2", "x", "positive"), ("adjustment", "0", "x", "zero"),
                                       ("adjustment", "1", "  ", "reason"), ("gift", "1", "x", "Unknown kind"),
                                       ("topup", "lots", "x", "number of hours")]:
        with pytest.raises(InvalidInput, match=words):
            credits.add_credit(db_session, account, retainer.id, kind, "2017-08-02", hours, reason)
    db_session.rollback()
    with transaction(db_session):
        credits.add_credit(db_session, account, retainer.id, "topup", dt.date(2017, 8, 2), "10", "Prepaid block")
    ledger = ledger_reads.retainer_ledger(db_session, retainer, dt.datetime(2017, 8, 20, tzinfo=dt.UTC))
    assert ledger.current.topups_s == 36000 and ledger.credits[0].reason == "Prepaid block"


def test_tokens_are_long_random_and_lookups_are_uniform(db_session):
    account, retainer = setup_retainer(db_session)
    token = retainer.public_token
    assert len(token) == 32 and service.plausible_token(token)
    assert service.by_token(db_session, token).id == retainer.id
    for bad in ("x" * 32, "short", "../../etc/passwd", token.upper() if token.upper() != token else "y" * 32):
        with pytest.raises(NotFound, match="nothing at this address"):
            service.by_token(db_session, bad)
    tokens = {service.new_token() for _ in range(1000)}
    assert len(tokens) == 1000


def test_sample_entries_sum_exactly(db_session):
    account, retainer = setup_retainer(db_session)
    frame = service.entries_frame(db_session, retainer.id)
    assert len(frame) == 168
    raw = SAMPLE.read_text().splitlines()[1:]
    client1 = [line for line in raw if line.split(",")[2] == "Client 1"]
    total = 0
    for line in client1:
        h, m, s = (int(x) for x in line.split(",")[11].split(":"))
        total += h * 3600 + m * 60 + s
    assert int(frame["duration_s"].sum()) == total
