"""Benchmark of the task queue at deployment shape. Not a test: prints figures measured in one run.

    python bench/job_queue.py [--accounts 1000] [--retainers 10] [--workers 2] [--sample 20]

Sets up a fresh PostgreSQL database with ``--accounts`` pro accounts of ``--retainers`` retainers
each, stores one Toggl export per account (``--rows`` entries for each retainer's client, this
month) in blob storage, then queues one ``csv_import`` job per account at once on Redis and lets
``--workers`` ``hourtab worker`` processes (one thread each) drain it. Prints:

- jobs/s: jobs done / (last finish − first enqueue);
- queue latency: a job's start − its enqueue (median, p99);
- upload → updated data: a job's commit − its enqueue, for every job (median, p99);
- upload → updated public page: for ``--sample`` accounts, the time until their public page, polled
  over the app, first shows the imported hours: the page's headline (``#headline``, read with the
  standard library's HTML parser, since the figure is split by tags) says "N of 20 h used"
  (median, p99; the poller shares the CPUs).

Needs PostgreSQL at ``HOURTAB_TEST_PG_URL`` (default postgres@127.0.0.1:5432) and Redis at
``--redis`` (default redis://127.0.0.1:6379/0; only this run's keys are touched and removed).
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file's name shadows the standard library's ``queue`` (which redis and others import): run
# with the project root, not bench/, first on the path.
ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from html.parser import HTMLParser  # noqa: E402

PG_ADMIN_URL = os.environ.get("HOURTAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
HEADER = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
          "Duration,Tags,Amount ()\n")


def export_csv(clients: list[str], rows: int, first: dt.date) -> bytes:
    """``rows`` one-hour entries per client on the first days of this month."""
    lines = [HEADER]
    for c, client in enumerate(clients):
        for i in range(rows):
            day = first + dt.timedelta(days=i % 5)
            start = 8 + (c * rows + i) // 5 % 14
            lines.append(f"Ada,ada@example.com,{client},Work,,Entry {i},Yes,{day},{start:02d}:00:00,{day},"
                         f"{start + 1:02d}:00:00,01:00:00,,\n")
    return "".join(lines).encode()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def summary(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: no samples"
    return (f"{name}: median {statistics.median(values) * 1000:,.0f} ms, p99 {pct(values, 0.99) * 1000:,.0f} ms "
            f"(n={len(values)})")


def setup(app, accounts: int, retainers: int, rows: int, first: dt.date) -> list[tuple[int, str, bytes]]:
    """Accounts and retainers (no Argon2: stored hashes that cannot log in), and one export each."""
    from app.db import get_db
    from hourtab.core.accounts import Account
    from hourtab.retainers import service

    out = []
    with app.app_context():
        db = get_db()
        terms = service.parse_terms(service.TermsInput(hours="20", start=first.isoformat(), timezone="UTC"))
        for a in range(accounts):
            account = Account(email=f"bench{a}@example.com", password_hash="!", plan="pro", display_name=f"B{a}")
            db.add(account)
            db.flush()
            clients = [f"Client {a}-{r}" for r in range(retainers)]
            tokens = [service.create_retainer(db, account, f"Retainer {r}", c, terms).public_token
                      for r, c in enumerate(clients)]
            db.commit()
            out.append((account.id, tokens[0], export_csv(clients, rows, first)))
    return out


class _Headline(HTMLParser):
    """Collects the text inside the element with ``id="headline"``, whatever tags split it."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.parts = 0, []

    def handle_starttag(self, tag, attrs) -> None:
        if self.depth:
            self.depth += 1
        elif dict(attrs).get("id") == "headline":
            self.depth = 1

    def handle_endtag(self, tag) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data) -> None:
        if self.depth:
            self.parts.append(data)


def headline(html: str) -> str:
    """The public page's headline as a reader sees it ("5 of 20 h used · 15 h left · resets 1 Jan")."""
    parser = _Headline()
    parser.feed(html)
    return " ".join("".join(parser.parts).split())


def poll_pages(app, targets: dict[str, float], expect: str, seen: dict[str, float], stop: threading.Event) -> None:
    client = app.test_client()
    while not stop.is_set() and len(seen) < len(targets):
        for token in targets:
            if token not in seen and targets[token] and \
                    headline(client.get(f"/h/{token}").get_data(as_text=True)).startswith(expect):
                seen[token] = time.time()
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=1000)
    parser.add_argument("--retainers", type=int, default=10)
    parser.add_argument("--rows", type=int, default=5, help="entries per retainer in each export")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample", type=int, default=20, help="public pages polled for the page latency")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()

    import redis
    from sqlalchemy import create_engine, text

    from app import create_app
    from app.jobs.broker import start
    from app.migrate import upgrade
    from hourtab.core.blobs import blob_store

    name = f"hourtab_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    queue = f"hourtab-bench-{uuid.uuid4().hex[:8]}"
    workers: list[subprocess.Popen] = []
    tmp = Path(tempfile.mkdtemp(prefix="hourtab-bench-queue-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOURTAB_DATABASE_URL": url, "HOURTAB_REDIS_URL": args.redis,
           "HOURTAB_QUEUE_NAME": queue, "HOURTAB_DATA_DIR": str(tmp), "HOURTAB_SECRET_KEY": "b" * 48}
    try:
        upgrade(url)
        app = create_app({k: v for k, v in env.items() if k.startswith("HOURTAB_")} | {"QUEUE_IMMEDIATE": False})
        first = dt.datetime.now(dt.UTC).date().replace(day=1)
        t = time.time()
        made = setup(app, args.accounts, args.retainers, args.rows, first)
        print(f"set-up: {args.accounts} accounts × {args.retainers} retainers in {time.time() - t:.1f} s")
        with app.app_context():      # the page before the import: the probe must not match it yet
            before = headline(app.test_client().get(f"/h/{made[0][1]}").get_data(as_text=True))
        if not before.startswith("0 of 20 h used"):
            raise SystemExit(f"the public page's headline reads {before!r}; the page probe needs updating")
        blobs = blob_store(tmp)
        for account_id, _, data in made:
            blobs.put_bytes(f"imports/{account_id}/export.csv", data)
        for i in range(args.workers):
            log = open(tmp / f"worker-{i}.log", "wb")
            workers.append(subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "worker",
                                             "--threads", "1"], env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.time() + 120    # start-up is not queue latency: wait for every consumer to say so
        while sum(b"HourTab worker:" in (tmp / f"worker-{i}.log").read_bytes() for i in range(args.workers)) \
                < args.workers and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1)

        targets = {token: 0.0 for _, token, _ in made[:: max(1, len(made) // max(1, args.sample))][:args.sample]}
        seen: dict[str, float] = {}
        stop = threading.Event()
        expect = f"{args.rows} of 20 h used"
        poller = threading.Thread(target=poll_pages, args=(app, targets, expect, seen, stop), daemon=True)
        poller.start()
        queue_obj = app.extensions["hourtab.queue"]
        with app.app_context():
            from app.db import get_db

            db = get_db()
            t0 = time.time()
            for account_id, token, _ in made:
                job = start(db, account_id, "csv_import", {"key": f"imports/{account_id}/export.csv",
                                                           "filename": "export.csv"})
                if token in targets:
                    targets[token] = time.time()
                queue_obj.enqueue(job.id)
            enqueued = time.time() - t0
        engine = app.extensions["hourtab.engine"]
        while True:
            with engine.connect() as c:
                left = c.scalar(text("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"))
            if not left:
                break
            time.sleep(0.5)
        poller.join(timeout=30)      # the last pages may still be on their way
        stop.set()
        with engine.connect() as c:
            rows = c.execute(text("SELECT status, created_at, started_at, finished_at FROM jobs")).all()
        done = [r for r in rows if r.status == "done"]
        span = (max(r.finished_at for r in done) - min(r.created_at for r in rows)).total_seconds()
        print(f"enqueued {len(rows)} import jobs in {enqueued:.2f} s; {len(done)} done, "
              f"{len(rows) - len(done)} failed")
        print(f"throughput: {len(done) / span:.1f} jobs/s with {args.workers} workers ({span:.1f} s in all)")
        print(summary("queue latency (start − enqueue)", [(r.started_at - r.created_at).total_seconds()
                                                           for r in done]))
        print(summary("upload → updated data (commit − enqueue)",
                      [(r.finished_at - r.created_at).total_seconds() for r in done]))
        print(summary(f"upload → updated public page ({len(targets)} polled pages)",
                      [seen[t] - targets[t] for t in seen]))
        app.extensions["hourtab.engine"].dispose()
    finally:
        for w in workers:
            w.terminate()
            w.wait(timeout=15)
        client = redis.Redis.from_url(args.redis)
        keys = list(client.scan_iter(match=f"*{queue}*"))
        if keys:
            client.delete(*keys)
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
