"""What a change costs beside a history (issue 31). Not a test: prints figures measured in one run.

    python bench/change_cost.py [--sizes 0,2000,20000] [--big] [--repeat 5] [--no-postgres] [--backends sqlite,postgresql] [--json FILE]

For each backend and each history size (entries of 10 retainers, imported at once as a Toggl
export; ``--big`` adds 200,000), in-process through the services, each committed:
a 50-row import of new entries dated this month, the same file again (nothing changes: the
no-change case), and a terms edit (a retainer's hours). Prints the median of ``--repeat`` runs of
each, the ratio of each to its cost beside no history (goal ≤ 1.5 at the largest size), and the
50-row import beside 20,000 entries ÷ importing those 20,000 rows at once (goal ≤ 10 %).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.factories import TOGGL_HEADER  # noqa: E402

CLIENTS = [f"Client {i}" for i in range(10)]
PG_ADMIN_URL = os.environ.get("HOURTAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def history_csv(rows: int, today: dt.date, seed: int = 1) -> bytes:
    """``rows`` entries over the three years before this month, spread over the ten clients."""
    rng = np.random.default_rng(seed)
    first = dt.date(today.year, today.month, 1) - dt.timedelta(days=3 * 365)
    lines = [TOGGL_HEADER]
    days = np.sort(rng.integers(0, 3 * 365 - 1, rows))
    for k in range(rows):
        day = first + dt.timedelta(days=int(days[k]))
        start = 7 * 3600 + (k % 40) * 360
        seconds = int(rng.integers(60, 3 * 3600))
        lines.append(_line(CLIENTS[k % 10], f"Task {k}", day, start, seconds))
    return "".join(lines).encode()


def _line(client: str, desc: str, day: dt.date, start: int, seconds: int) -> str:
    begin = dt.datetime.combine(day, dt.time()) + dt.timedelta(seconds=start)
    end = begin + dt.timedelta(seconds=seconds)
    dur = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return (f"Ada,ada@example.com,{client},P,,{desc},Yes,{begin:%Y-%m-%d},{begin:%H:%M:%S},"
            f"{end:%Y-%m-%d},{end:%H:%M:%S},{dur},,\n")


def recent_csv(batch: int, today: dt.date, rows: int = 50) -> bytes:
    """``rows`` new entries dated this month (batch ``batch``: distinct descriptions and times)."""
    first = dt.date(today.year, today.month, 1)
    lines = [TOGGL_HEADER]
    for k in range(rows):
        day = first + dt.timedelta(days=k % max(today.day, 1))
        lines.append(_line(CLIENTS[k % 10], f"Recent {batch}-{k}", day, 20 * 3600 + batch * 60 + k % 5, 1800 + k))
    return "".join(lines).encode()


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(url: str, size: int, repeat: int) -> dict[str, float]:
    from hourtab.core.db import make_engine, make_sessionmaker, transaction
    from hourtab.retainers import service

    try:
        from hourtab.imports.importer import import_file
    except ImportError:  # the code before issue 31, measured for the "before" figures
        from hourtab.timesheets.importer import import_file  # type: ignore[no-redef]
    from tests.factories import make_account

    engine = make_engine(url)
    session = make_sessionmaker(engine)()
    today = dt.datetime.now(dt.UTC).date()
    start = dt.date(today.year, today.month, 1) - dt.timedelta(days=3 * 365)
    account = make_account(session, "bench@example.com", "pro")
    with transaction(session):
        retainers = [service.create_retainer(session, account, c, c, service.parse_terms(
            service.TermsInput(hours="40", start=start))) for c in CLIENTS]
    out: dict[str, float] = {}
    if size:
        data = history_csv(size, today)

        def load() -> None:
            with transaction(session):
                import_file(session, account, data, "history.csv")

        out["history_import_s"] = timed(load)
    runs: dict[str, list[float]] = {"import_50": [], "no_change": [], "terms_edit": []}
    for batch in range(repeat):
        data = recent_csv(batch, today)

        def once(data: bytes = data) -> None:
            with transaction(session):
                import_file(session, account, data, "recent.csv")

        runs["import_50"].append(timed(once))
        runs["no_change"].append(timed(once))

        def edit(hours: int = 40 + batch, rid: int = retainers[batch % 10].id) -> None:
            with transaction(session):
                service.update_retainer(session, account, rid, terms=service.parse_terms(
                    service.TermsInput(hours=str(hours), start=start)))

        runs["terms_edit"].append(timed(edit))
    session.close()
    engine.dispose()
    out.update({k: statistics.median(v) for k, v in runs.items()})
    return out


def backends(postgres: bool):
    from app.migrate import upgrade

    folder = Path(tempfile.mkdtemp())
    template = folder / "template.db"
    upgrade(f"sqlite:///{template}")

    def sqlite(size: int) -> str:
        path = folder / f"s{size}.db"
        shutil.copyfile(template, path)
        return f"sqlite:///{path}"

    yield "sqlite", sqlite, lambda: None
    if postgres:
        from sqlalchemy import create_engine, text

        admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        names: list[str] = []

        def pg(size: int) -> str:
            names.append(f"bench_cost_{uuid.uuid4().hex[:12]}")
            with admin.connect() as c:
                c.execute(text(f'CREATE DATABASE "{names[-1]}"'))
            url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + names[-1]
            upgrade(url)
            return url

        def drop() -> None:
            with admin.connect() as c:
                for name in names:
                    c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()

        yield "postgresql", pg, drop
    shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,2000,20000")
    parser.add_argument("--big", action="store_true", help="add 200,000 entries of history")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] + ([200_000] if args.big else [])
    results: dict[str, dict[int, dict[str, float]]] = {}
    for name, make_url, cleanup in backends(not args.no_postgres):
        if name not in args.backends.split(","):
            continue
        results[name] = {}
        try:
            for size in sizes:
                results[name][size] = figures = measure(make_url(size), size, args.repeat)
                print(f"{name:10} {size:>7} entries: " + ", ".join(
                    f"{k} {v * 1000:.0f} ms" for k, v in figures.items()), flush=True)
        finally:
            cleanup()
        base, top = results[name][sizes[0]], results[name][sizes[-1]]
        for what in ("import_50", "no_change", "terms_edit"):
            print(f"{name:10} {what}: cost at {sizes[-1]:,} ÷ at {sizes[0]:,} = {top[what] / base[what]:.2f} "
                  "(goal ≤ 1.5)")
        if 20000 in results[name]:
            beside = results[name][20000]
            print(f"{name:10} 50-row import beside 20,000 ÷ importing the 20,000 at once = "
                  f"{beside['import_50'] / beside['history_import_s']:.1%} (goal ≤ 10 %)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
