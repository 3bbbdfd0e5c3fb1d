"""Benchmark of the time-tracker importer (issue 3). Not a test: prints figures measured in one run.

    python bench/import_csv.py [--rows 100000] [--repeat 15] [--no-postgres] [--no-import]

Prints, for a generated Toggl export and a Clockify export (DD.MM.YYYY, 12 h times):
``csv inspect`` time / plain ``pandas.read_csv`` time of the same file (goal <= 3; medians of
runs that alternate between the two, see ``alternating``), then a full
import into SQLite and PostgreSQL (rows/s; goal: 100k rows < 5 s on SQLite), a re-import of the
same file (all unchanged), and the process's peak memory. Times are wall-clock; the CPU time of
this process is printed beside imports, because on a shared machine the two differ (the database
server's own work is in neither CPU figure).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PG_ADMIN_URL = os.environ.get("HOURTAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _clock(seconds: np.ndarray) -> np.ndarray:
    return np.char.add(np.char.add(np.char.zfill((seconds // 3600).astype(str), 2), ":"),
                       np.char.add(np.char.add(np.char.zfill((seconds % 3600 // 60).astype(str), 2), ":"),
                                   np.char.zfill((seconds % 60).astype(str), 2)))


def generate(rows: int, kind: str, path: Path) -> None:
    """A realistic export: one user, working days over ~4 years, 1-6 entries a day, no overlaps."""
    rng = np.random.default_rng(42)
    start = pd.Timestamp("2021-01-04")
    day = np.sort(rng.integers(0, 1500, rows))
    slot = pd.Series(day).groupby(day).cumcount().to_numpy()
    begin = 7 * 3600 + slot * 600 + rng.integers(0, 300, rows)
    duration = rng.integers(60, 300, rows)
    end = begin + duration
    dates = start + pd.to_timedelta(day, unit="D")
    clients = np.array(["ACME", "Globex", "Initech", "Umbrella"])[rng.integers(0, 4, rows)]
    projects = np.array(["Model audit", "Training infra", "Eval harness", "Data pipeline", "Support"])[
        rng.integers(0, 5, rows)]
    desc = np.char.add("Task #", rng.integers(1, 5000, rows).astype(str))
    if kind == "toggl":
        frame = pd.DataFrame({
            "User": "Ada Lovelace", "Email": "ada@example.com", "Client": clients, "Project": projects, "Task": "",
            "Description": desc, "Billable": np.where(rng.random(rows) < 0.8, "Yes", "No"),
            "Start date": dates.strftime("%Y-%m-%d"), "Start time": _clock(begin),
            "End date": dates.strftime("%Y-%m-%d"), "End time": _clock(end), "Duration": _clock(duration),
            "Tags": np.where(rng.random(rows) < 0.3, "ml, audit", ""), "Amount (EUR)": "",
        })
        frame.to_csv(path, index=False, encoding="utf-8-sig")
    else:
        def twelve(sec: np.ndarray) -> np.ndarray:
            h = sec // 3600
            h12 = np.where(h % 12 == 0, 12, h % 12)
            return np.char.add(np.char.add(h12.astype(str), ":"),
                               np.char.add(np.char.add(np.char.zfill((sec % 3600 // 60).astype(str), 2), ":"),
                                           np.char.add(np.char.zfill((sec % 60).astype(str), 2),
                                                       np.where(h < 12, " AM", " PM"))))
        frame = pd.DataFrame({
            "Project": projects, "Client": clients, "Description": desc, "Task": "", "User": "Ada Lovelace",
            "Group": "", "Email": "ada@example.com", "Tags": "", "Billable": "Yes",
            "Start Date": dates.strftime("%d.%m.%Y"), "Start Time": twelve(begin),
            "End Date": dates.strftime("%d.%m.%Y"), "End Time": twelve(end),
            "Duration (h)": _clock(duration), "Duration (decimal)": np.char.mod("%.2f", duration / 3600),
            "Billable Rate (USD)": "100.00", "Billable Amount (USD)": "1.00",
        })
        frame.to_csv(path, index=False, quoting=1, lineterminator="\r\n")


def alternating(fns: dict[str, object], repeat: int) -> dict[str, float]:
    """Median wall time of each function, run in turn (a, b, a, b, …) rather than one after the other.

    On a shared two-core machine the load changes from second to second; interleaving puts the
    baseline and the measured code under the same load, and the median drops the runs that an
    unrelated burst landed on, so the ratio holds still from one run to the next.
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(values) for name, values in times.items()}


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_import(url: str, data: bytes, label: str) -> None:
    from app.migrate import upgrade
    from hourtab.core.accounts import Account
    from hourtab.core.db import make_engine, make_sessionmaker, transaction
    from hourtab.imports.importer import import_file

    upgrade(url)
    engine = make_engine(url)
    session = make_sessionmaker(engine)()
    with transaction(session):
        account = Account(email="bench@example.com", password_hash="x", plan="pro")
        session.add(account)
    for attempt in ("import", "re-import"):
        t0, cpu0 = time.perf_counter(), time.process_time()
        with transaction(session):
            result = import_file(session, account, data, "bench.csv", max_bytes=None)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        n = result.report.entries
        print(f"  {label:<10} {attempt:<9} {n} rows in {elapsed:.2f} s = {n / elapsed:,.0f} rows/s "
              f"(this process's CPU {cpu:.2f} s; new {result.new}, unchanged {result.unchanged}, "
              f"changed {result.changed})")
    session.close()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-import", action="store_true", help="only the csv inspect ratio")
    parser.add_argument("--repeat", type=int, default=15, help="alternating runs of each (median taken)")
    args = parser.parse_args()

    from hourtab.timesheets import read_timesheet

    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("toggl", "clockify"):
            path = Path(tmp) / f"{kind}.csv"
            generate(args.rows, kind, path)
            size = path.stat().st_size / 1048576
            timed = alternating({"pandas": lambda p=path: pd.read_csv(p),
                                 "inspect": lambda p=path: read_timesheet(p.read_bytes(), max_bytes=None,
                                                                          fingerprints=False)}, args.repeat)
            base, inspect = timed["pandas"], timed["inspect"]
            _, report = read_timesheet(path.read_bytes(), max_bytes=None, fingerprints=False)
            assert report.entries == args.rows and not report.errors, report.as_json()
            print(f"{kind}: {args.rows} rows, {size:.1f} MiB — {report.explanation}")
            print(f"  pandas.read_csv {base:.3f} s; csv inspect {inspect:.3f} s; ratio {inspect / base:.2f} (goal <= 3)")
            if args.no_import:
                continue
            data = path.read_bytes()
            bench_import(f"sqlite:///{Path(tmp) / (kind + '.db')}", data, "SQLite")
            if not args.no_postgres:
                from sqlalchemy import create_engine, text

                name = f"hourtab_bench_{uuid.uuid4().hex[:10]}"
                admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
                with admin.connect() as c:
                    c.execute(text(f'CREATE DATABASE "{name}"'))
                try:
                    bench_import(PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name, data, "PostgreSQL")
                finally:
                    with admin.connect() as c:
                        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                    admin.dispose()
            print(f"  peak memory of this process so far: {peak_mib():.0f} MiB")


if __name__ == "__main__":
    main()
