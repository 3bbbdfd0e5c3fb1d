"""Benchmark: the public hours page of a 3-year, 20,000+ entry retainer vs a static file, same server.

What it does, all in one run on this machine:
1. builds a fresh SQLite database, imports a generated Toggl export of three years of entries through
   the real importer, and creates a retainer that counts them;
2. measures the cold render time of ``/h/<token>`` right after an import (a small extra import, which
   assigns its entries, then the first request renders), median of several rounds;
3. writes a static file of exactly the page's byte size into the app's static folder, starts
   gunicorn with 2 sync workers, and loads the static file, the page, and the page revalidated with
   its ``ETag`` (``If-None-Match``, answered ``304``) from a separate process (Debian's ``wrk``,
   32 connections) one after the other;
4. prints req/s, p50/p99 latency and errors for each, and the ratios page/static and 304/full.

    python bench/public_page.py [--duration 20] [--connections 32] [--entries 21000] [--profile 40]
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import os
import pstats
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = ("User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,"
          "Duration,Tags,Amount ()\n")
WORDS = ("training run", "eval harness", "data loader", "profiling", "client call", "incident review",
         "tokenizer fix", "GPU utilisation", "checkpointing", "report writing", "W&B dashboards", "mixed precision")


def toggl_export(n: int, end: dt.date, seed: int = 7, client: str = "Acme ML") -> bytes:
    """``n`` entries spread evenly over the three years before ``end`` (deterministic)."""
    rng = random.Random(seed)
    start = end - dt.timedelta(days=3 * 365)
    days = (end - start).days + 1
    lines = [HEADER]
    for i in range(n):
        day = start + dt.timedelta(days=i * days // n)
        begin = dt.datetime.combine(day, dt.time(8)) + dt.timedelta(minutes=rng.randrange(0, 600))
        dur = dt.timedelta(minutes=rng.randrange(5, 90), seconds=rng.randrange(60))
        finish = begin + dur
        h, rem = divmod(int(dur.total_seconds()), 3600)
        desc = f"{rng.choice(WORDS)} #{i}"
        lines.append(f"Bench,bench@example.com,{client},Project {i % 4},,{desc},Yes,{begin:%Y-%m-%d},"
                     f"{begin:%H:%M:%S},{finish:%Y-%m-%d},{finish:%H:%M:%S},{h:02d}:{rem // 60:02d}:{rem % 60:02d},,\n")
    return "".join(lines).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"server did not answer {url}")


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]


def wrk(url: str, duration: int, connections: int, *headers: str) -> dict[str, float]:
    extra = [arg for header in headers for arg in ("-H", header)]
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", *extra, url],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = 0
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        errors += int(m.group(1))
    if m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out):
        errors += sum(int(x) for x in m.groups())
    return {"rps": rps, "p50": p50, "p99": p99, "requests": total, "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=20, help="seconds of load per URL (default 20)")
    parser.add_argument("--connections", type=int, default=32, help="concurrent connections (default 32)")
    parser.add_argument("--entries", type=int, default=21_000, help="entries in the retainer (default 21000)")
    parser.add_argument("--rounds", type=int, default=5, help="cold-render rounds after an import (default 5)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N costliest calls of the cold renders (cProfile, cumulative) and stop")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk not found (apt-get install wrk)")

    work = Path(tempfile.mkdtemp(prefix="hourtab-bench-"))
    env = {**os.environ, "HOURTAB_DATA_DIR": str(work), "HOURTAB_DATABASE_URL": f"sqlite:///{work / 'bench.db'}"}
    os.environ.update(env)
    static_name = f"bench-{os.getpid()}.html"
    static_path = ROOT / "app" / "static" / static_name
    server = None
    try:
        from app import create_app
        from app.db import get_db
        from app.migrate import upgrade
        from hourtab.core.accounts import Account
        from hourtab.core.db import transaction
        from hourtab.imports.importer import import_file
        from hourtab.retainers import service

        app = create_app()
        upgrade(app.config["DATABASE_URL"])
        today = dt.date.today()
        with app.app_context():
            db = get_db()
            t0 = time.perf_counter()
            with transaction(db):
                account = Account(email="bench@example.com", password_hash="!", plan="pro",
                                  display_name="Bench Consultant")
                db.add(account)
                db.flush()
                import_file(db, account, toggl_export(args.entries, today), "three-years.csv")
                retainer = service.create_retainer(
                    db, account, "Bench retainer", "Acme ML",
                    service.parse_terms(service.TermsInput(hours="400", start=str(today - dt.timedelta(days=3 * 365)),
                                                           reset_day=1, rounding=6)))
            token, rid, account_id = retainer.public_token, retainer.id, account.id
            count = len(service.entries_frame(db, rid))
            print(f"setup: {count} entries imported and matched in {time.perf_counter() - t0:.1f} s")

        client = app.test_client()
        profile = cProfile.Profile()
        cold = []
        for i in range(args.rounds):
            with app.app_context():
                db = get_db()
                with transaction(db):
                    import_file(db, db.get(Account, account_id),
                                toggl_export(3, today, seed=100 + i, client="Acme ML"), f"extra-{i}.csv")
            t = time.perf_counter()
            r = profile.runcall(client.get, f"/h/{token}") if args.profile else client.get(f"/h/{token}")
            cold.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200, r.status_code
        if args.profile:
            print(f"cold render under cProfile: median {statistics.median(cold):.0f} ms, {args.rounds} rounds")
            pstats.Stats(profile).sort_stats("cumulative").print_stats(args.profile)
            return
        full = client.get(f"/h/{token}")
        body, etag = full.data, full.headers["ETag"]
        warm, revalidated = [], []
        for times, headers in ((warm, {}), (revalidated, {"If-None-Match": etag})):
            for _ in range(50):
                t = time.perf_counter()
                client.get(f"/h/{token}", headers=headers)
                times.append((time.perf_counter() - t) * 1000)
        print(f"page: {len(body):,} bytes; cold render right after an import: median "
              f"{statistics.median(cold):.0f} ms (min {min(cold):.0f}, max {max(cold):.0f}, {args.rounds} rounds; "
              f"goal < 250 ms); cached in-process: median {statistics.median(warm):.2f} ms, "
              f"304 revalidation {statistics.median(revalidated):.2f} ms")

        static_path.write_bytes(b"x" * len(body))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "--log-level", "warning",
             "app:create_app()"], cwd=ROOT, env=env, start_new_session=True)
        page_url, static_url = f"{base}/h/{token}", f"{base}/static/{static_name}"
        wait_http(static_url)
        for _ in range(20):  # both workers render and cache the page once
            urllib.request.urlopen(page_url).read()
        print(f"load: wrk, 2 threads, {args.connections} connections, {args.duration} s per URL, "
              f"gunicorn 2 sync workers, on {os.cpu_count()} CPUs")
        results = {}
        for name, url, headers in (("static", static_url, ()), ("page", page_url, ()),
                                   ("304", page_url, (f"If-None-Match: {etag}",))):
            results[name] = wrk(url, args.duration, args.connections, *headers)
            r = results[name]
            print(f"{name:>6}: {r['rps']:8.0f} req/s   p50 {r['p50']:6.2f} ms   p99 {r['p99']:6.2f} ms   "
                  f"{r['requests']} requests, {r['errors']} errors")
        ratio = results["page"]["rps"] / results["static"]["rps"]
        print(f" ratio: page/static = {ratio:.2f} (goal >= 0.9); page p99 {results['page']['p99']:.1f} ms "
              f"(goal < 25 ms); errors {results['page']['errors']} (goal 0)")
        print(f" revalidation: 304 p50 {results['304']['p50']:.2f} ms vs full {results['page']['p50']:.2f} ms; "
              f"304/full req/s = {results['304']['rps'] / results['page']['rps']:.2f} (goal: 304 faster)")
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=15)
        static_path.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
