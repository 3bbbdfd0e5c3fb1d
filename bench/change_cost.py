"""What a change costs beside a history (issue 31). Not a test: prints figures measured in one run.

    python bench/change_cost.py [--sizes 0,2000,20000] [--big] [--repeat 5] [--no-postgres] [--no-cli]
                                [--backends sqlite,postgresql] [--json FILE]

For each backend and each history size (entries of 10 retainers, imported at once as a Toggl
export; ``--big`` adds 200,000), with a Toggl Track connection to the tests' fake tracker on
loopback (``tests/helpers/fake_trackers.py``), each change committed:

* ``import_50``: a 50-row import of new entries dated this month;
* ``no_change``: the same file again (nothing changes);
* ``sync_3``: a sync (a ``sync_run`` job through the job runner) bringing 3 new entries;
* ``sync_none``: a sync right after, nothing new;
* ``terms_edit``: a retainer's hours.

In-process through the services, then (``cli_*``, unless ``--no-cli``) the same through ``hourtab
import --yes``, ``hourtab sync run`` and ``hourtab retainer edit --yes`` run as subprocesses on the
same database (``HOURTAB_DATABASE_URL``): those include the interpreter's start and imports.
Prints the median of ``--repeat`` runs of each, the ratio of each to its cost beside no history
(goal ≤ 1.5 at the largest size), and the 50-row import beside 20,000 entries ÷ importing those
20,000 rows at once (goal ≤ 10 %).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hourtab.imports.importer import import_file  # noqa: E402
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


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


CHANGES = ("import_50", "no_change", "sync_3", "sync_none", "terms_edit")
SECRET = "the change-cost bench's secret key"
TOKEN = "tok_bench_change_cost_0123456789abcdef"


def fake_toggl():
    """The tests' fake Toggl Track, its two clients named as two of the bench's retainers' clients."""
    from tests.helpers.fake_trackers import Toggl

    fake = Toggl(TOKEN)
    for i, client in enumerate(fake.clients):
        client["name"] = CLIENTS[i]
    return fake


def add_three(fake, batch: int) -> None:
    """Three stopped entries of the last hours (this month, past the cursor of the last sync)."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    for k in range(3):
        fake.add(now - dt.timedelta(minutes=90 - 20 * k), 600 + 60 * k, f"Synced {batch}-{k}", project=k % 2)


class Setup:
    """One account of 10 retainers beside ``size`` entries of history, a connected (fake) Toggl."""

    def __init__(self, url: str, size: int, tracker_url: str, fake) -> None:
        from hourtab.core.db import make_engine, make_sessionmaker, transaction
        from hourtab.retainers import service
        from hourtab.sync import service as sync_service
        from hourtab.sync.limits import Limits
        from hourtab.sync.token_box import TokenBox
        from tests.factories import make_account

        self.url, self.size, self.fake = url, size, fake
        self.engine = make_engine(url)
        self.session = make_sessionmaker(self.engine)()
        self.today = dt.datetime.now(dt.UTC).date()
        self.start = dt.date(self.today.year, self.today.month, 1) - dt.timedelta(days=3 * 365)
        self.account = make_account(self.session, "bench@example.com", "pro")
        self.box, self.limits = TokenBox.from_settings("", SECRET), Limits(allow_private=True)
        with transaction(self.session):
            self.retainers = [service.create_retainer(self.session, self.account, c, c, service.parse_terms(
                service.TermsInput(hours="40", start=self.start))) for c in CLIENTS]
        self.history_import_s = timed(self.load_history) if size else None
        add_three(fake, -1)
        with transaction(self.session):
            self.connection_id = sync_service.connect(self.session, self.account, self.box, "toggl", TOKEN,
                                                      api_url=tracker_url, limits=self.limits).id
        self.sync()  # the first sync reads the tracker's whole history: not one of the changes measured

    def load_history(self) -> None:
        from hourtab.core.db import transaction

        data = history_csv(self.size, self.today)
        with transaction(self.session):
            import_file(self.session, self.account, data, "history.csv")

    def import_csv(self, data: bytes) -> None:
        from hourtab.core.db import transaction

        with transaction(self.session):
            import_file(self.session, self.account, data, "recent.csv")

    def sync(self) -> None:
        """One ``sync_run`` job through the job runner the workers use, as the tests run it."""
        from hourtab.core.db import make_sessionmaker, transaction
        from hourtab.core.jobrunner import JobRunner
        from hourtab.core.jobs import Job, create_job
        from hourtab.sync import runner

        with transaction(self.session):
            job = create_job(self.session, self.account.id, "sync_run", {"connection_id": self.connection_id})
        options = runner.Options(limits=self.limits)
        handler = {"sync_run": lambda s, j: runner.sync_job(s, j, self.box, options).as_json()}
        JobRunner(make_sessionmaker(self.engine), handler, worker="bench").run(job.id)
        self.session.expire_all()
        done = self.session.get_one(Job, job.id)
        if done.status != "done" or done.result.get("status") != "done":
            raise SystemExit(f"the sync failed: {done.error or done.result}")

    def edit(self, batch: int) -> None:
        """A retainer's hours, through ``changes.apply`` as the edit form and ``hourtab retainer edit`` run it."""
        from hourtab.core.db import transaction
        from hourtab.retainers import changes, service

        rid = self.retainers[batch % 10].id
        terms = service.parse_terms(service.TermsInput(hours=str(40 + batch), start=self.start))
        with transaction(self.session):
            changes.apply(self.session, self.account.id, lambda: service.update_retainer(
                self.session, self.account, rid, terms=terms), confirm=True, moves=False)

    def close(self) -> None:
        self.session.close()
        self.engine.dispose()


def in_process(setup: Setup, repeat: int) -> dict[str, float]:
    """Each change through the services, committed, ``repeat`` times: the medians."""
    runs: dict[str, list[float]] = {k: [] for k in CHANGES}
    for batch in range(repeat):
        data = recent_csv(batch, setup.today)
        runs["import_50"].append(timed(setup.import_csv, data))
        runs["no_change"].append(timed(setup.import_csv, data))
        add_three(setup.fake, batch)
        runs["sync_3"].append(timed(setup.sync))
        runs["sync_none"].append(timed(setup.sync))
        runs["terms_edit"].append(timed(setup.edit, batch))
    return {k: statistics.median(v) for k, v in runs.items()}


def cli(setup: Setup, repeat: int, folder: Path) -> dict[str, float]:
    """The same changes through ``hourtab`` run as a subprocess on the same database: the medians."""
    env = {**os.environ, "HOURTAB_DATABASE_URL": setup.url, "HOURTAB_DATA_DIR": str(folder / "data"),
           "HOURTAB_SECRET_KEY": SECRET, "HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    hourtab = [sys.executable, "-c", "from app.cli import cli; cli()"]

    def run(*args: str) -> None:
        done = subprocess.run([*hourtab, *args], env=env, capture_output=True, text=True, check=False)
        if done.returncode:
            raise SystemExit(f"hourtab {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}")

    runs: dict[str, list[float]] = {k: [] for k in CHANGES}
    for batch in range(repeat):
        path = folder / f"cli-{batch}.csv"
        path.write_bytes(recent_csv(1000 + batch, setup.today))
        imported = ("import", str(path), "--account", "bench@example.com", "--yes", "--json")
        runs["import_50"].append(timed(run, *imported))
        runs["no_change"].append(timed(run, *imported))
        add_three(setup.fake, 1000 + batch)
        synced = ("sync", "run", "--connection", str(setup.connection_id), "--json")
        runs["sync_3"].append(timed(run, *synced))
        runs["sync_none"].append(timed(run, *synced))
        rid = str(setup.retainers[batch % 10].id)
        runs["terms_edit"].append(timed(run, "retainer", "edit", rid, "--hours", str(60 + batch), "--yes",
                                        "--json"))
    return {f"cli_{k}": statistics.median(v) for k, v in runs.items()}


def measure(url: str, size: int, repeat: int, with_cli: bool) -> dict[str, float]:
    from tests.helpers.fake_trackers import serving

    fake = fake_toggl()
    with serving(toggl=fake) as trackers:
        setup = Setup(url, size, trackers.url, fake)
        try:
            out = {"history_import_s": setup.history_import_s} if size else {}
            out.update(in_process(setup, repeat))
            if with_cli:
                with tempfile.TemporaryDirectory() as folder:
                    out.update(cli(setup, repeat, Path(folder)))
        finally:
            setup.close()
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
    parser.add_argument("--no-cli", action="store_true", help="in-process only")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS", "1")
    sizes = [int(s) for s in args.sizes.split(",")] + ([200_000] if args.big else [])
    results: dict[str, dict[int, dict[str, float]]] = {}
    for name, make_url, cleanup in backends(not args.no_postgres):
        if name not in args.backends.split(","):
            continue
        results[name] = {}
        try:
            for size in sizes:
                results[name][size] = figures = measure(make_url(size), size, args.repeat, not args.no_cli)
                print(f"{name:10} {size:>7} entries: " + ", ".join(
                    f"{k} {v * 1000:.0f} ms" for k, v in figures.items()), flush=True)
        finally:
            cleanup()
        summarise(name, results[name], sizes)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


def summarise(name: str, results: dict[int, dict[str, float]], sizes: list[int]) -> None:
    base, top = results[sizes[0]], results[sizes[-1]]
    for what in [k for k in base if k != "history_import_s"]:
        print(f"{name:10} {what}: cost at {sizes[-1]:,} ÷ at {sizes[0]:,} = {top[what] / base[what]:.2f} "
              "(goal ≤ 1.5)")
    if 20000 in results:
        beside = results[20000]
        for what in [k for k in ("import_50", "cli_import_50") if k in beside]:
            print(f"{name:10} {what} beside 20,000 ÷ importing the 20,000 at once = "
                  f"{beside[what] / beside['history_import_s']:.1%} (goal ≤ 10 %)")


if __name__ == "__main__":
    main()
