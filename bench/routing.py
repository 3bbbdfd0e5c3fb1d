"""Benchmark of routing entries to retainers (issue 19). Not a test: prints figures measured in one run.

    python bench/routing.py [--rows 50000] [--retainers 10] [--postgres]

One generated Toggl export (one user, 12 clients, two years, rows without a client among them) is
imported three ways into fresh accounts of the same database, in the same run:

* baseline: an account without retainers (nothing to route, no zones to choose, nothing to revise);
* "for" one retainer: an account with ``--retainers`` retainers in four time zones, the upload
  imported for one of them (one read; every row routed by the rules; the preview's table);
* no retainer chosen: the same account set-up, each row read in its retainer's zone (a second
  read per zone that differs from the account's) and routed.

Then a rule change on the busiest retainer, which routes every entry again and compares every
closed period before and after (the revision marks), against building that retainer's ledger once.
Ratios are to the baseline, in wall-clock and in this process's CPU time (SQLite runs in-process,
so its work is in the CPU figure; on a shared machine the wall clock also counts waiting). Goals:
an import ≤ 2× the baseline (it also writes where each entry counts and builds each retainer's
ledger twice for the preview's before → after); a rule change ≤ 20 ledger builds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
CLIENTS = [f"Client {c}" for c in "ABCDEFGHIJKL"]
ZONES = ["UTC", "America/New_York", "Europe/Istanbul", "Asia/Tokyo"]


def _clock(seconds: np.ndarray) -> np.ndarray:
    return np.char.add(np.char.add(np.char.zfill((seconds // 3600).astype(str), 2), ":"),
                       np.char.add(np.char.add(np.char.zfill((seconds % 3600 // 60).astype(str), 2), ":"),
                                   np.char.zfill((seconds % 60).astype(str), 2)))


def generate(rows: int) -> bytes:
    rng = np.random.default_rng(19)
    day = np.sort(rng.integers(0, 730, rows))
    slot = pd.Series(day).groupby(day).cumcount().to_numpy()
    begin = 7 * 3600 + slot * 420 + rng.integers(0, 120, rows)
    duration = rng.integers(60, 300, rows)
    dates = pd.Timestamp("2024-11-01") + pd.to_timedelta(day, unit="D")
    client = np.array(CLIENTS + [""])[rng.integers(0, len(CLIENTS) + 1, rows)]
    project = np.where(client == "", "", np.char.add(client.astype(str), " work"))
    frame = pd.DataFrame({
        "User": "Ada", "Email": "ada@example.com", "Client": client, "Project": project, "Task": "",
        "Description": np.char.add("Task #", rng.integers(1, 5000, rows).astype(str)), "Billable": "Yes",
        "Start date": dates.strftime("%Y-%m-%d"), "Start time": _clock(begin),
        "End date": dates.strftime("%Y-%m-%d"), "End time": _clock(begin + duration), "Duration": _clock(duration),
        "Tags": "", "Amount ()": ""})
    return frame.to_csv(index=False).encode()


def run(url: str, data: bytes, retainers: int) -> None:
    from app.migrate import upgrade
    from hourtab.core.accounts import Account
    from hourtab.core.db import make_engine, make_sessionmaker, transaction
    from hourtab.imports.importer import import_file
    from hourtab.retainers import ledger_reads, service
    from hourtab.retainers.matching import MatchRules

    upgrade(url)
    engine = make_engine(url)
    session = make_sessionmaker(engine)()

    def account(name: str, with_retainers: bool) -> tuple[Account, list]:
        with transaction(session):
            acc = Account(email=f"{name}@example.com", password_hash="x", plan="pro", timezone="UTC")
            session.add(acc)
            session.flush()
            made = [service.create_retainer(session, acc, f"R{i}", CLIENTS[i], service.parse_terms(
                service.TermsInput(hours="40", start="2024-11-01", timezone=ZONES[i % len(ZONES)])))
                for i in range(retainers)] if with_retainers else []
        return acc, made

    def timed(label: str, fn) -> float:
        t0, cpu0 = time.perf_counter(), time.process_time()
        with transaction(session):
            fn()
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        print(f"  {label:<40} {elapsed:6.2f} s (CPU {cpu:5.2f} s)")
        return cpu

    base_acc, _ = account("base", False)
    base = timed("baseline import (no retainers)", lambda: import_file(session, base_acc, data, "b.csv", max_bytes=None))
    timed("baseline re-import", lambda: import_file(session, base_acc, data, "b.csv", max_bytes=None))
    chosen_acc, chosen = account("chosen", True)
    t_chosen = timed("import for one retainer", lambda: import_file(session, chosen_acc, data, "c.csv",
                                                                   retainer_id=chosen[0].id, max_bytes=None))
    timed("re-import for one retainer", lambda: import_file(session, chosen_acc, data, "c.csv",
                                                            retainer_id=chosen[0].id, max_bytes=None))
    zoned_acc, zoned = account("zoned", True)
    t_zoned = timed("import, rows read in their zones", lambda: import_file(session, zoned_acc, data, "z.csv",
                                                                           max_bytes=None))
    ledger = timed("one ledger build (busiest retainer)", lambda: ledger_reads.retainer_ledger(session, zoned[0]))
    rule = timed("rule change: route all, compare closed", lambda: service.update_retainer(
        session, zoned_acc, zoned[0].id, rules=MatchRules(clients=(CLIENTS[0], CLIENTS[-1]))))
    print(f"  CPU ratios: for one retainer {t_chosen / base:.2f}× baseline, zones {t_zoned / base:.2f}× baseline "
          f"(goal ≤ 2); rule change {rule / ledger:.1f} ledger builds (goal ≤ 20)")
    session.close()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--retainers", type=int, default=10)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    data = generate(args.rows)
    print(f"{args.rows} rows, {len(data) / 1048576:.1f} MiB, {len(CLIENTS)} clients, {args.retainers} retainers")
    with tempfile.TemporaryDirectory() as tmp:
        print("SQLite")
        run(f"sqlite:///{Path(tmp) / 'routing.db'}", data, args.retainers)
    if args.postgres:
        from sqlalchemy import create_engine, text

        name = f"hourtab_bench_{uuid.uuid4().hex[:10]}"
        admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            print("PostgreSQL")
            run(PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name, data, args.retainers)
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
