"""``hourtab serve`` alone is the complete app: its own child consumer runs the queued jobs (SQLite queue),
is replaced when it dies (``/healthz`` showing the gap), and a Ctrl-C stops everything quietly.
Two servers on one host share nothing (no gunicorn control socket)."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from tests.helpers.http_sessions import csrf_of, healthy
from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


def test_serve_runs_queued_jobs_with_its_own_consumer(tmp_path, sqlite_template):
    import shutil

    import requests


    db = tmp_path / "hourtab.db"
    shutil.copyfile(sqlite_template, db)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOURTAB_DATA_DIR": str(tmp_path / "data"),
           "HOURTAB_DATABASE_URL": f"sqlite:///{db}"}
    env.pop("HOURTAB_REDIS_URL", None)
    log = open(tmp_path / "serve.log", "wb")
    server = subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "serve", "--port",
                               str(port), "--workers", "1"], env=env, cwd=tmp_path, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: healthy(base), 60, "hourtab serve")
        s = requests.Session()
        s.post(f"{base}/signup", data={"csrf_token": csrf_of(s, f"{base}/signup"), "email": "solo@example.com",
                                       "password": "a long enough password", "display_name": "Solo",
                                       "timezone": "UTC"})
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            z.writestr("../escape.txt", "refused by the worker, after the request returned")
        r = s.post(f"{base}/evidence", data={"csrf_token": csrf_of(s, f"{base}/evidence")},
                   files={"file": ("bad.zip", buffer.getvalue())}, allow_redirects=False)
        job = r.headers["Location"]
        status = wait_until(lambda: (j := s.get(f"{base}{job}.json").json())["status"] == "failed" and j, 60,
                       "the in-process consumer")
        assert "outside the archive" in status["error"]
        assert (tmp_path / "data" / "queue.db").exists()                   # the SQLite queue in the data dir
        assert re.search(r"Retry", s.get(f"{base}{job}").text)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
        time.sleep(0.2)


def _serve(tmp_path: Path, sqlite_template: Path, name: str = "serve", **env_extra: str):
    """``hourtab serve`` on a free port in its own session; returns (process, base URL, log path, db)."""
    folder = tmp_path / name
    folder.mkdir()
    db = folder / "hourtab.db"
    shutil.copyfile(sqlite_template, db)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOURTAB_DATA_DIR": str(folder / "data"),
           "HOURTAB_DATABASE_URL": f"sqlite:///{db}", **env_extra}
    env.pop("HOURTAB_REDIS_URL", None)
    log = folder / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "serve", "--port",
                                    str(port), "--workers", "1"], env=env, cwd=folder, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    return process, f"http://127.0.0.1:{port}", log, db


def _stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _bad_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("../escape.txt", "refused by the worker")
    return buffer.getvalue()


def test_a_killed_consumer_is_replaced_and_healthz_shows_the_gap(tmp_path, sqlite_template):
    import requests


    server, base, log, db = _serve(tmp_path, sqlite_template, HOURTAB_JOB_LEASE_S="2")
    try:
        wait_until(lambda: healthy(base), 60, "hourtab serve")
        health = lambda: requests.get(f"{base}/healthz", timeout=5).json()  # noqa: E731
        wait_until(lambda: health()["queue"]["consumers"] == 1, 60, "the consumer serve started")
        # The supervisor logs the pid once Popen returns, which can be after the child registered.
        started = lambda: re.search(r"queue consumer started \(pid (\d+)\)", log.read_text())  # noqa: E731
        wait_until(started, 60, "the supervisor's log line")
        first = int(started().group(1))
        s = requests.Session()
        s.post(f"{base}/signup", data={"csrf_token": csrf_of(s, f"{base}/signup"), "email": "solo@example.com",
                                       "password": "a long enough password", "display_name": "Solo",
                                       "timezone": "UTC"})
        form = csrf_of(s, f"{base}/evidence")

        os.kill(first, signal.SIGKILL)
        samples: list[dict] = []           # /healthz, polled from the kill until the job is done
        polling = threading.Event()

        def sample() -> None:
            while not polling.is_set():
                try:
                    samples.append(health())
                except requests.RequestException:
                    pass
                time.sleep(0.05)

        poller = threading.Thread(target=sample, daemon=True)
        poller.start()
        r = s.post(f"{base}/evidence", data={"csrf_token": form}, files={"file": ("bad.zip", _bad_zip())},
                   allow_redirects=False)
        job = r.headers["Location"]
        done = wait_until(lambda: (j := s.get(f"{base}{job}.json").json())["status"] == "failed" and j, 90,
                     "a new consumer to take the job")
        polling.set()
        poller.join(10)
        # The job waited for a consumer that was not there yet, and /healthz said so.
        gap = [h for h in samples if h["queue"]["consumers"] == 0 and h["queue"]["waiting"] == 1]
        assert gap, samples
        assert all(h["status"] == "degraded" and h["queue"]["stalled"] for h in gap)
        assert "outside the archive" in done["error"] and done["attempts"] == 1
        after = wait_until(lambda: (h := health())["queue"]["consumers"] == 1 and h, 30, "the new consumer")
        assert after["status"] == "ok" and after["queue"]["waiting"] == 0
        with sqlite3.connect(db) as c:
            worker = c.execute("SELECT worker FROM jobs WHERE kind = 'evidence_ingest'").fetchone()[0]
        assert not worker.endswith(f":{first}")           # taken by the replacement, not the dead one
        assert re.search(rf"queue consumer \(pid {first}\) stopped \(killed by SIGKILL\); starting another",
                         log.read_text())
    finally:
        _stop(server)


def test_ctrl_c_stops_serve_and_its_consumer_promptly_without_tracebacks(tmp_path, sqlite_template):

    server, base, log, _ = _serve(tmp_path, sqlite_template, HOURTAB_WORKER_THREADS="3")
    wait_until(lambda: healthy(base), 60, "hourtab serve")
    wait_until(lambda: "HourTab worker:" in log.read_text(), 60, "the consumer")
    assert "HourTab worker: 3 thread(s)" in log.read_text()      # the setting, as `hourtab worker` reads it
    consumer = int(re.search(r"queue consumer started \(pid (\d+)\)", log.read_text()).group(1))
    began = time.monotonic()
    _stop(server, signal.SIGINT)            # what a terminal's Ctrl-C sends to the foreground group
    took = time.monotonic() - began
    output = log.read_text()
    assert "Traceback" not in output and "AssertionError" not in output, output
    # Well inside gunicorn's 10 s grace: no worker hangs until it is killed, no consumer starts on the way out.
    assert took < 8, (took, output)
    assert "SIGKILL" not in output and "starting another" not in output, output
    assert len(re.findall(r"queue consumer started", output)) == 1, output
    wait_until(lambda: not _alive(consumer), 30, "the consumer to stop with the server")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def test_two_servers_on_one_host_share_no_control_socket(tmp_path, sqlite_template):

    runtime, home = tmp_path / "run", tmp_path / "home"
    runtime.mkdir(mode=0o700)
    home.mkdir()
    shared = {"XDG_RUNTIME_DIR": str(runtime), "HOME": str(home)}
    a, url_a, _, _ = _serve(tmp_path, sqlite_template, "a", **shared)
    b, url_b, _, _ = _serve(tmp_path, sqlite_template, "b", **shared)
    try:
        wait_until(lambda: healthy(url_a) and healthy(url_b), 90, "both servers")
        sockets = [p for p in (*runtime.rglob("*"), *home.rglob("*")) if p.is_socket()]
        assert sockets == []
        _stop(b)
        assert healthy(url_a)                 # stopping one leaves the other untouched
    finally:
        _stop(a)
        _stop(b)
