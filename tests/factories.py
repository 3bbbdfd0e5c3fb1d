"""Test objects built one way for every test: accounts, Toggl CSVs, offline W&B runs, framed files.

Real parts throughout: accounts are real rows, CSVs are what Toggl writes, W&B runs are written by
the installed SDK in offline mode, and framed files follow LevelDB's log format that W&B uses.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from incidents.evidence.wandb.framing import write_records  # noqa: F401  (tests build framed files with it)

# --- accounts -------------------------------------------------------------------------------------

#: A password long enough for the strength check, for the tests that do log in.
PASSWORD = "correct horse battery"


def make_account(session, email: str = "ada@example.com", plan: str = "pro", **fields):
    """An account row without a usable password: Argon2 costs about a second and these never log in."""
    from hourtab.core.accounts import Account
    from hourtab.core.db import transaction

    with transaction(session):
        account = Account(email=email, password_hash="!", plan=plan, **fields)
        session.add(account)
        session.flush()
    return account


# --- Toggl CSVs -----------------------------------------------------------------------------------

TOGGL_HEADER = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
                "Duration,Tags,Amount ()\n")


def toggl_row(day: str, start: str, end: str, duration: str, description: str = "Work", project: str = "P",
              end_day: str | None = None, client: str = "C") -> str:
    """One line of a Toggl detailed export, written as given (so tests can write bad cells)."""
    return (f"Ada,ada@example.com,{client},{project},,{description},Yes,{day},{start},{end_day or day},{end},"
            f"{duration},,\n")


def toggl_csv(rows: list[tuple[str, str, str, str, str]]) -> bytes:
    """A Toggl-shaped export: (client, description, date, start time, duration hh:mm:ss) per row."""
    lines = [TOGGL_HEADER]
    for client, desc, day, start, dur in rows:
        quoted = '"' + desc.replace('"', '""') + '"'
        h, m, s = (int(x) for x in dur.split(":"))
        end = (dt.datetime.fromisoformat(f"{day}T{start}") + dt.timedelta(hours=h, minutes=m, seconds=s))
        lines.append(f"Ada,ada@example.com,{client},Project A,,{quoted},Yes,{day},{start},"
                     f"{end:%Y-%m-%d},{end:%H:%M:%S},{dur},,\n")
    return "".join(lines).encode("utf-8")


# --- offline W&B runs -----------------------------------------------------------------------------


@contextmanager
def offline_wandb(root: Path) -> Iterator[Path]:
    """WANDB_MODE=offline, silent, with every folder W&B writes under ``root``; the environment is
    restored afterwards."""
    keys = {"WANDB_MODE": "offline", "WANDB_DIR": str(root), "WANDB_CACHE_DIR": str(root / "cache"),
            "WANDB_CONFIG_DIR": str(root / "config"), "WANDB_DATA_DIR": str(root / "data"),
            "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true", "WANDB_CONSOLE": "off"}
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        yield root
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --- framed (.wandb) files ------------------------------------------------------------------------


