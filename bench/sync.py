"""Benchmark of tracker sync at deployment shape. Not a test: prints figures measured in one run.

    python bench/sync.py [--accounts 1000] [--entries 20] [--new 3] [--workers 2] [--threads 1]
                         [--latency-ms 0] [--sample 20] [--project 10000] [--interval 15]

Sets up a fresh PostgreSQL database with ``--accounts`` pro accounts, one retainer each, and a local
Toggl Track API (the tests' fake, ``tests/helpers/fake_trackers.py``) on 127.0.0.1 that answers
every account's own token with the same ``--entries`` entries of this month, each answer after
``--latency-ms`` (a real tracker answers in 100–300 ms; the fake at once). ``--workers`` ``hourtab
worker`` processes (``--threads`` threads each, Redis queue) then run, in order:

1. the baseline: one ``csv_import`` job per account importing those entries as a Toggl CSV export;
2. the switch: each account connects the tracker (``hourtab.sync.service.connect``) and the workers'
   own schedule (the reaper's ``queue_due_syncs``) queues one first sync per connection, which must
   adopt every imported entry (0 new: nothing double-counted);
3. the figure: ``--new`` entries appear in the tracker and every connection falls due; the time until
   every account's public page shows its new hours, from the moment they fell due. It is taken from
   each sync's commit (a page reads the committed ledger; its cache keys on the retainer revision the
   sync bumps), checked on ``--sample`` pages polled over the app while it runs, and on every page once
   at the end.

The increment syncs run on freshly started workers, stopped after them: their CPU time (user +
system, read with ``os.wait4`` when each exits, less what ``--workers`` workers cost to start and stop
idle, measured in the same run) divided by the syncs is the **worker CPU seconds per sync**; the
PostgreSQL processes serving the workers' sessions are read the same way (``/proc``, by their
``application_name``), the **database CPU seconds per sync**. From it
and the syncs' span the run extrapolates to ``--project`` accounts syncing every ``--interval``
minutes: the syncs a second, the worker cores they keep busy, and the time until every page is current
on ``--workers`` workers (the span grows with the accounts: the queue is drained at the measured rate).

``--profile N`` then runs N more syncs one after another in the bench's own process under cProfile
and prints where a sync's wall time goes, with its SQL statements and commits.

Prints per phase jobs/s and the span, the ratio sync ÷ CSV import, and the page latencies. Needs
PostgreSQL at ``HOURTAB_TEST_PG_URL`` (default postgres@127.0.0.1:5432) and Redis at ``--redis``
(default redis://127.0.0.1:6379/0; only this run's keys are touched and removed).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import argparse  # noqa: E402
import base64  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from http.server import ThreadingHTTPServer  # noqa: E402

from tests.helpers.fake_trackers import Toggl, serving  # noqa: E402

PG_ADMIN_URL = os.environ.get("HOURTAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
HEADER = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
          "Duration,Tags,Amount ()\n")


class SharedToggl(Toggl):
    """One tracker's data answered to many accounts, each with its own token."""

    def __init__(self, tokens: list[str], latency_s: float = 0.0) -> None:
        super().__init__(tokens[0])
        self.accepted = {"Basic " + base64.b64encode(f"{t}:api_token".encode()).decode() for t in tokens}
        self.latency_s = latency_s

    def authorised(self, headers) -> bool:
        # Asked once per request, outside the fake's lock: a tracker's latency, waited in parallel.
        time.sleep(self.latency_s)
        return headers.get("Authorization") in self.accepted


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def summary(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: no samples"
    return (f"{name}: median {statistics.median(values):.1f} s, p99 {pct(values, 0.99):.1f} s, "
            f"max {max(values):.1f} s (n={len(values)})")


def export_csv(fake: Toggl, zone) -> bytes:
    """The fake's entries as Toggl's detailed CSV writes them (wall clock in the profile's zone)."""
    lines = [HEADER]
    names = {p["id"]: p["name"] for p in fake.projects}
    for e in fake.entries.values():
        start = dt.datetime.fromisoformat(e["start"]).astimezone(zone)
        end = dt.datetime.fromisoformat(e["stop"]).astimezone(zone)
        h, rest = divmod(e["duration"], 3600)
        lines.append(f"Ada Lovelace,ada@example.com,Acme GmbH,{names[e['project_id']]},,{e['description']},Yes,"
                     f"{start:%Y-%m-%d},{start:%H:%M:%S},{end:%Y-%m-%d},{end:%H:%M:%S},"
                     f"{h:02d}:{rest // 60:02d}:{rest % 60:02d},,\n")
    return "".join(lines).encode()


def wait_jobs(engine, kind: str, expected: int, timeout: float) -> list:
    from sqlalchemy import text

    deadline = time.time() + timeout
    while time.time() < deadline:
        with engine.connect() as c:
            rows = c.execute(text("SELECT status, created_at, started_at, finished_at, result FROM jobs "
                                  "WHERE kind = :k"), {"k": kind}).all()
        if len(rows) >= expected and not [r for r in rows if r.status in ("queued", "running")]:
            return rows
        time.sleep(0.5)
    raise SystemExit(f"{kind}: jobs still waiting after {timeout:.0f} s")


def report(name: str, rows: list, t0: float, poller: Poller | None = None) -> float:
    """Jobs/s and the span from ``t0`` to the last job's end; per job, its end after ``t0``."""
    done = [r for r in rows if r.status == "done"]
    ends = [r.finished_at.timestamp() - t0 for r in done]
    span = max(ends)
    print(f"{name}: {len(done)} of {len(rows)} jobs done in {span:.1f} s = {len(done) / span:.1f} jobs/s")
    print(summary("  start → job done (every job)", ends))
    if poller is not None:
        print(summary(f"  start → page shows the hours (polled over the app, {len(poller.sample)} pages)",
                      poller.latencies(t0)))
    return span


def page_used(client, token: str) -> int:
    return json.loads(client.get(f"/h/{token}.json").get_data())["current"]["used_seconds"]


class Poller:
    """Polls ``sample`` public pages over the app until each shows ``expected`` seconds this period."""

    def __init__(self, app, sample: list[str], expected: int) -> None:
        self.client, self.sample, self.expected = app.test_client(), sample, expected
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set() and len(self.seen) < len(self.sample):
            for token in self.sample:
                if token not in self.seen and page_used(self.client, token) == self.expected:
                    self.seen[token] = time.time()
            time.sleep(0.5)

    def __enter__(self) -> Poller:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.thread.join(timeout=60)
        self.stop.set()

    def latencies(self, t0: float) -> list[float]:
        return [at - t0 for at in self.seen.values()]


def start_workers(count: int, threads: int, env: dict[str, str], logs: Path) -> list[subprocess.Popen]:
    """``count`` ``hourtab worker`` processes (``threads`` each), returned once each says it is ready."""
    started = []
    for _ in range(count):
        log = logs / f"worker-{uuid.uuid4().hex[:6]}.log"
        started.append((log, subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "worker",
                                                "--threads", str(threads)], env=env, stdout=log.open("wb"),
                                               stderr=subprocess.STDOUT)))
    deadline = time.time() + 120
    while not all(b"HourTab worker:" in log.read_bytes() for log, _ in started) and time.time() < deadline:
        time.sleep(0.2)
    return [w for _, w in started]


WORKER_APP = "hourtab-bench-worker"


def database_cpu(engine) -> float:
    """CPU seconds (user + system) of the PostgreSQL processes serving the workers' sessions now (each
    pooled connection lives as long as its worker; the few overflow ones closed on the way are missed)."""
    from sqlalchemy import text

    with engine.connect() as c:
        pids = c.execute(text("SELECT pid FROM pg_stat_activity WHERE application_name = :a"),
                         {"a": WORKER_APP}).scalars().all()
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:     # gone meanwhile
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def stop_workers(workers: list[subprocess.Popen]) -> float:
    """Stops ``workers`` and returns the CPU seconds (user + system) they used in their whole life."""
    cpu = 0.0
    for w in workers:
        if w.returncode is None:
            w.terminate()
            _, status, usage = os.wait4(w.pid, 0)
            w.returncode = os.waitstatus_to_exitcode(status)
            cpu += usage.ru_utime + usage.ru_stime
    return cpu


def profile_syncs(app, fake: Toggl, count: int, when: dt.datetime) -> None:
    """``count`` more syncs (one new entry each), one after another in this process under cProfile: where
    a sync's wall time goes when nothing else runs beside it (the tracker's waits are the fake's)."""
    import cProfile
    import pstats
    from collections import Counter

    from sqlalchemy import event, select

    from hourtab.core.db import transaction
    from hourtab.core.jobs import create_job
    from hourtab.sync.models import Connection

    fake.add(when, 900, "Profiled", project=0)
    runner = app.extensions["hourtab.queue"].runner
    with app.app_context(), app.extensions["hourtab.sessionmaker"]() as db:
        chosen = db.execute(select(Connection.id, Connection.account_id).order_by(Connection.id).limit(count)).all()
        with transaction(db):
            jobs = [create_job(db, account_id, "sync_run", {"connection_id": cid, "trigger": "bench"}).id
                    for cid, account_id in chosen]
        engine, counts = app.extensions["hourtab.engine"], Counter()
        event.listen(engine, "before_cursor_execute", lambda *a: counts.update(["statements"]))
        event.listen(engine, "commit", lambda *a: counts.update(["commits"]))
        profiler = cProfile.Profile()
        wall, cpu = time.perf_counter(), time.process_time()
        profiler.enable()
        statuses = [runner.run(job_id) for job_id in jobs]
        profiler.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"profiled: {len(jobs)} syncs one after another in one process ({sorted(set(statuses))}): "
          f"wall {wall / len(jobs) * 1000:.1f} ms a sync, CPU {cpu / len(jobs) * 1000:.1f} ms a sync, "
          f"{counts['statements'] / len(jobs):.1f} SQL statements and {counts['commits'] / len(jobs):.1f} commits "
          f"a sync; cumulative wall by function, ms a sync:")
    stats = pstats.Stats(profiler)
    rows = sorted(((v[3], k) for k, v in stats.stats.items()), reverse=True)   # type: ignore[attr-defined]
    for cumulative, (file, line, name) in rows[:30]:
        print(f"  {cumulative / len(jobs) * 1000:8.1f}  {Path(file).name}:{line}({name})")


def extrapolate(accounts: int, span: float, cpu_per_sync: float, wall_per_sync: float, workers: int,
                threads: int, project: int, interval_min: float) -> None:
    """What ``project`` accounts syncing every ``interval_min`` minutes would need, from this run's rates."""
    interval = interval_min * 60
    rate = project / interval
    projected_span = span * project / accounts
    print(f"extrapolated to {project:,} accounts syncing every {interval_min:g} min ({rate:.1f} syncs/s):")
    print(f"  worker CPU: {rate * cpu_per_sync:.2f} cores busy ({cpu_per_sync:.3f} s a sync); worker time "
          f"(wall, waits on the database included): {rate * wall_per_sync:.2f} workers busy "
          f"({wall_per_sync:.3f} s a sync)")
    verdict = "within" if projected_span <= interval else "NOT within"
    print(f"  every page current {projected_span:.0f} s after falling due on {workers} workers × {threads} "
          f"thread(s) ({span:.1f} s × {project:,} / {accounts:,}): {verdict} one sync interval ({interval:.0f} s)")
    slots = workers * threads
    print(f"  {workers} × {threads} threads keep up while a sync holds a thread at most "
          f"{slots * interval / project:.3f} s ({slots} × {interval:.0f} s ÷ {project:,}) and a worker's CPU at most "
          f"{workers * interval / project:.3f} s (one core a process); measured here: {wall_per_sync:.3f} s wall, "
          f"{cpu_per_sync:.3f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=20, help="entries already in the tracker (and the CSV)")
    parser.add_argument("--new", type=int, default=3, help="entries added in the tracker before the timed syncs")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="consumer threads per worker")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="the fake tracker's time to answer")
    parser.add_argument("--sample", type=int, default=20, help="public pages polled while the syncs run")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--project", type=int, default=10000, help="accounts to extrapolate to")
    parser.add_argument("--interval", type=float, default=15, help="minutes between a connection's syncs")
    parser.add_argument("--profile", type=int, default=0,
                        help="then this many syncs one after another in the bench's process, under cProfile")
    args = parser.parse_args()

    from zoneinfo import ZoneInfo

    import redis
    from sqlalchemy import create_engine, text, update

    from app import create_app
    from app.jobs.broker import start
    from app.migrate import upgrade
    from hourtab.core.accounts import Account
    from hourtab.core.blobs import blob_store
    from hourtab.core.db import transaction
    from hourtab.retainers import service as retainers
    from hourtab.sync import service
    from hourtab.sync.limits import Limits
    from hourtab.sync.models import Connection

    name = f"hourtab_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    queue = f"hourtab-bench-{uuid.uuid4().hex[:8]}"
    workers: list[subprocess.Popen] = []
    tmp = Path(tempfile.mkdtemp(prefix="hourtab-bench-sync-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOURTAB_DATABASE_URL": url, "HOURTAB_REDIS_URL": args.redis,
           "HOURTAB_QUEUE_NAME": queue, "HOURTAB_DATA_DIR": str(tmp), "HOURTAB_SECRET_KEY": "s" * 48,
           "HOURTAB_JOB_LEASE_S": "3", "HOURTAB_SYNC_MINUTES": "600",
           "HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS": "1",   # the fake tracker listens on loopback
           "PGAPPNAME": WORKER_APP}                   # the workers' database sessions, to read their CPU
    tokens = [f"bench_{uuid.uuid4().hex}" for _ in range(args.accounts)]
    fake = SharedToggl(tokens, args.latency_ms / 1000)
    berlin = ZoneInfo(fake.me["timezone"])
    today = dt.datetime.now(berlin).date()
    first = today.replace(day=1)
    for i in range(args.entries):
        when = dt.datetime.combine(first + dt.timedelta(days=i % max(1, today.day)), dt.time(0, 5), tzinfo=berlin)
        fake.add(when + dt.timedelta(minutes=50 * (i // max(1, today.day))), 1500 + 7 * i, f"Entry {i}", project=0)
    try:
        upgrade(url)
        app = create_app({k: v for k, v in env.items() if k.startswith("HOURTAB_")} | {"QUEUE_IMMEDIATE": False})
        engine = app.extensions["hourtab.engine"]
        csv = export_csv(fake, berlin)
        blobs = blob_store(tmp)
        t = time.time()
        pages: list[tuple[int, str]] = []
        with app.app_context():
            db = app.extensions["hourtab.sessionmaker"]()
            terms = retainers.parse_terms(retainers.TermsInput(hours="200", start=first.isoformat(),
                                                               timezone="Europe/Berlin"))
            for a in range(args.accounts):
                with transaction(db):
                    account = Account(email=f"bench{a}@example.com", password_hash="!", plan="pro",
                                      timezone="Europe/Berlin")
                    db.add(account)
                    db.flush()
                    pages.append((account.id, retainers.create_retainer(db, account, "Acme", "Acme GmbH",
                                                                        terms).public_token))
                blobs.put_bytes(f"imports/{account.id}/export.csv", csv)
        print(f"set-up: {args.accounts} accounts, {args.entries} tracker entries each, in {time.time() - t:.1f} s")

        idle = start_workers(args.workers, args.threads, env, tmp)
        idle_db = database_cpu(engine)
        idle_cpu = stop_workers(idle)
        workers += start_workers(args.workers, args.threads, env, tmp)

        sample = [token for _, token in pages[:: max(1, len(pages) // max(1, args.sample))][:args.sample]]
        # A real tracker accepts every connection: the loopback fake must not drop them past a backlog of 5
        # when several threads connect at once.
        ThreadingHTTPServer.request_queue_size = 1024
        with serving(toggl=fake) as trackers:
            # 1. the baseline: the same entries as CSV imports, through the same queue and workers
            with Poller(app, sample, sum(e["duration"] for e in fake.entries.values())) as poller:
                with app.app_context():
                    db = app.extensions["hourtab.sessionmaker"]()
                    t0 = time.time()
                    for account_id, _ in pages:
                        app.extensions["hourtab.queue"].enqueue(start(db, account_id, "csv_import", {
                            "key": f"imports/{account_id}/export.csv", "filename": "export.csv"}).id)
                rows = wait_jobs(engine, "csv_import", args.accounts, args.timeout)
            csv_span = report("baseline: csv_import of the export", rows, t0, poller)
            # 2. the switch: connect, and let the workers' schedule queue the first syncs
            t = time.time()
            box = app.extensions["hourtab.tokens"]
            fake.latency_s = 0.0      # the bench checks the tokens one after another: not the figure
            with app.app_context():
                db = app.extensions["hourtab.sessionmaker"]()
                for (account_id, _), token in zip(pages, tokens, strict=True):
                    with transaction(db):
                        service.connect(db, db.get(Account, account_id), box, "toggl", token, api_url=trackers.url,
                                        limits=Limits.from_settings(app.config))
            fake.latency_s = args.latency_ms / 1000
            print(f"connected {args.accounts} accounts in {time.time() - t:.1f} s (each checks its token)")
            rows = wait_jobs(engine, "sync_run", args.accounts, args.timeout)
            report("first sync (full read, adopting the CSV entries)", rows, min(r.created_at.timestamp()
                                                                                  for r in rows))
            adopted = sorted({r.result.get("adopted") for r in rows if r.status == "done"})
            new = sorted({r.result.get("new") for r in rows if r.status == "done"})
            print(f"  adopted per connection: {adopted}; new: {new} (0 new = nothing counted twice)")

            # 3. the figure: new entries upstream, every connection due now
            for i in range(args.new):
                fake.add(dt.datetime.combine(today, dt.time(0, 1 + i), tzinfo=berlin), 600 + i, f"New {i}", project=0)
            expected = sum(e["duration"] for e in fake.entries.values())
            stop_workers(workers)
            # their CPU time is the increment syncs'
            workers += start_workers(args.workers, args.threads, env, tmp)
            with Poller(app, sample, expected) as poller:
                with engine.begin() as c:
                    c.execute(update(Connection).values(next_sync_at=dt.datetime.now(dt.UTC)))
                t0 = time.time()
                wait_jobs(engine, "sync_run", 2 * args.accounts, args.timeout)
            used_db = database_cpu(engine)
            used_cpu = stop_workers(workers)
        with engine.connect() as c:
            commits = [r[0].timestamp() - t0 for r in c.execute(text("SELECT last_success_at FROM sync_connections"))]
            rows = c.execute(text("SELECT status, created_at, started_at, finished_at, result FROM jobs "
                                  "WHERE kind = 'sync_run' ORDER BY created_at")).all()[args.accounts:]
        sync_span = report("increment sync (new entries upstream)", rows, t0, poller)
        print(f"  new per connection: {sorted({r.result.get('new') for r in rows if r.status == 'done'})}")
        print(summary("  due → sync committed (every connection)", commits))
        done = [r for r in rows if r.status == "done"]
        cpu_per_sync = (used_cpu - idle_cpu) / len(done)
        wall_per_sync = statistics.mean((r.finished_at - r.started_at).total_seconds() for r in done)
        print(f"worker CPU per sync: {cpu_per_sync:.3f} s ({used_cpu:.1f} s used by {args.workers} workers, less "
              f"{idle_cpu:.1f} s to start and stop them idle, for {len(done)} syncs); PostgreSQL CPU per sync "
              f"{(used_db - idle_db) / len(done):.3f} s (the workers' sessions); worker wall per sync "
              f"{wall_per_sync:.3f} s; load average {os.getloadavg()[0]:.1f}")
        client = app.test_client()
        wrong = [token for _, token in pages if page_used(client, token) != expected]
        print(f"every page checked after the run: {len(pages) - len(wrong)} of {len(pages)} show {expected} s "
              f"this period")
        print(f"ratio: increment sync ÷ CSV import, time until every page is current = {sync_span / csv_span:.2f} "
              f"({sync_span:.1f} s ÷ {csv_span:.1f} s for {args.accounts} accounts, {args.workers} workers)")
        extrapolate(args.accounts, sync_span, cpu_per_sync, wall_per_sync, args.workers, args.threads,
                    args.project, args.interval)
        if args.profile:
            with serving(toggl=fake) as trackers:
                with engine.begin() as c:
                    c.execute(update(Connection).values(api_url=trackers.url))
                profile_syncs(app, fake, args.profile, dt.datetime.combine(today, dt.time(0, 30), tzinfo=berlin))
        engine.dispose()
    finally:
        stop_workers(workers)
        client = redis.Redis.from_url(args.redis)
        keys = list(client.scan_iter(match=f"*{queue}*"))
        if keys:
            client.delete(*keys)
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
