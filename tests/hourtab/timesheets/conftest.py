"""Helpers for the importer tests: the real samples and small synthetic files built in code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import DATA, SAMPLES

TRACKERS = DATA / "timetrackers"
SHARED = SAMPLES / "timetrackers"


def sample(relative: str) -> bytes:
    return (TRACKERS / relative).read_bytes()


def sample_dir() -> Path:
    """The shared samples when this checkout sits beside them, else the copies in tests/data."""
    return SHARED if SHARED.is_dir() else TRACKERS


def make_account(session, email: str = "importer@example.com"):
    """An account row without Argon2 hashing (these tests never log in; hashing costs a second)."""
    from hourtab.accounts import Account
    from hourtab.db import transaction

    with transaction(session):
        account = Account(email=email, password_hash="not-a-login", plan="pro")
        session.add(account)
    return account


@pytest.fixture
def account(db_session):
    return make_account(db_session)


TOGGL_HEADER = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
                "Duration,Tags,Amount (EUR)\n")


def toggl_row(day: str, start: str, end: str, duration: str, description: str = "Work", project: str = "P",
              end_day: str | None = None, client: str = "C") -> str:
    return (f"Ada,ada@example.com,{client},{project},,{description},Yes,{day},{start},{end_day or day},{end},"
            f"{duration},,\n")
