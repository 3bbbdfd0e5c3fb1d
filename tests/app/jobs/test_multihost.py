"""Past one machine: two app processes and worker processes sharing PostgreSQL, Redis and an S3 bucket.

Real parts only: ``hourtab serve`` (gunicorn) twice and ``hourtab worker`` as child processes, a moto
S3 server, the machine's PostgreSQL and Redis, and an aiosmtpd server. A run uploaded through app A
is ingested by the worker and shown by app B; workers killed with SIGKILL mid-job (mid-parse, and
mid-SMTP) leave their jobs to the next worker: one stored run, no duplicate e-mail.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from tests.helpers.big_run import big_run_zip
from tests.helpers.databases import pg_database
from tests.helpers.hours import toggl_csv
from tests.helpers.http_sessions import csrf_of, healthy
from tests.helpers.mail import Sink
from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[3]
STEPS = 20_000          # parses in a few seconds: long enough to be killed in the middle
PASSWORD = "a long enough password"


class StallingSink(Sink):
    """Keeps the first alert's SMTP transaction open, so its sender can be killed in the middle."""

    stalled = False

    async def handle_DATA(self, server, session, envelope):  # noqa: N802
        await super().handle_DATA(server, session, envelope)
        if not self.stalled and self.messages[-1][1]["Subject"].startswith("80 %"):
            self.stalled = True
            await asyncio.sleep(20)
        return "250 OK"


@pytest.fixture
def pg_url(pg_template):
    with pg_database("hourtab_mh", template=pg_template) as url:
        yield url


@pytest.fixture
def s3_endpoint(monkeypatch):
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                 region_name="us-east-1").create_bucket(Bucket="hourtab-test")
    yield endpoint
    server.stop()


@pytest.fixture
def smtp():
    from aiosmtpd.controller import Controller

    sink = StallingSink()
    controller = Controller(sink, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield sink, f"smtp://127.0.0.1:{controller.port}"
    controller.stop()


@pytest.fixture
def deployment(pg_url, s3_endpoint, smtp, tmp_path):
    import redis

    queue = f"hourtab-test-{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOURTAB_DATABASE_URL": pg_url,
           "HOURTAB_REDIS_URL": "redis://127.0.0.1:6379/0", "HOURTAB_QUEUE_NAME": queue,
           "HOURTAB_BLOB_URL": "s3://hourtab-test/deploy", "HOURTAB_BLOB_ENDPOINT_URL": s3_endpoint,
           "HOURTAB_SECRET_KEY": "k" * 48, "HOURTAB_SMTP_URL": smtp[1], "HOURTAB_JOB_LEASE_S": "3",
           "HOURTAB_PUBLIC_URL": "https://hours.example.com", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> subprocess.Popen:
        (tmp_path / name).mkdir()
        log = open(tmp_path / f"{name}.log", "wb")
        process = subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", *args],
                                   env={**env, "HOURTAB_DATA_DIR": str(tmp_path / name)}, cwd=tmp_path / name,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(process)
        return process

    yield start, env, smtp[0]
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    keys = list(client.scan_iter(match=f"*{queue}*"))
    if keys:
        client.delete(*keys)


def _job(session, base: str, job_id: str) -> dict:
    return session.get(f"{base}/jobs/{job_id}.json", timeout=5).json()


def test_two_apps_one_worker_and_workers_killed_mid_job(deployment, pg_url, request, tmp_path):
    import requests

    start, env, sink = deployment
    archive = big_run_zip(request.config.cache.mkdir("hourtab-big-run"), STEPS)
    ports = free_port(), free_port()
    a, b = (f"http://127.0.0.1:{p}" for p in ports)
    start("app-a", "serve", "--no-queue-worker", "--workers", "1", "--port", str(ports[0]))
    start("app-b", "serve", "--no-queue-worker", "--workers", "1", "--port", str(ports[1]))
    worker = start("worker-1", "worker", "--threads", "1")
    wait_until(lambda: healthy(a) and healthy(b), 60, "both app processes")

    browser = requests.Session()                     # one consultant, whose cookie both hosts accept
    r = browser.post(f"{a}/signup", data={"csrf_token": csrf_of(browser, f"{a}/signup"),
                                          "email": "consultant@example.com", "password": PASSWORD,
                                          "display_name": "Ada", "timezone": "UTC"})
    assert r.url.endswith("/dashboard")
    first = dt.datetime.now(dt.UTC).date().replace(day=1)
    made = subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "retainer", "create",
                           "--account", "consultant@example.com", "--name", "Platform", "--client", "Client 1",
                           "--hours", "10", "--start", first.isoformat(), "--timezone", "UTC", "--json"],
                          env={**env, "HOURTAB_DATA_DIR": str(tmp_path / "cli")},
                          capture_output=True, text=True, check=True)
    token = re.search(r"/h/([A-Za-z0-9_-]+)", made.stdout).group(1)

    client = requests.Session()                      # the client subscribes on B, confirms on A
    assert client.post(f"{b}/h/{token}/alerts", data={"email": "client@example.org"}).ok
    confirmation = wait_until(lambda: sink.to("client@example.org"), 30, "the confirmation e-mail")[0]
    confirm = re.search(r"Confirm here: https://hours\.example\.com(\S+)",
                        confirmation.get_body(("plain",)).get_content()).group(1)
    assert "Alerts confirmed" in client.post(f"{a}{confirm}").text

    # A run uploaded through A, parsed by the worker, shown by B; the worker dies mid-parse.
    with open(archive, "rb") as f:
        r = browser.post(f"{a}/evidence", data={"csrf_token": csrf_of(browser, f"{a}/evidence")},
                         files={"file": ("big-run.zip", f)}, allow_redirects=False)
    job_id = r.headers["Location"].rsplit("/", 1)[1]
    wait_until(lambda: _job(browser, b, job_id)["phase"] == "Reading records", 60, "the worker to be parsing")
    os.killpg(worker.pid, signal.SIGKILL)
    worker = start("worker-2", "worker", "--threads", "1")
    done = wait_until(lambda: (s := _job(browser, b, job_id))["status"] in ("done", "failed") and s, 60, "the retry")
    assert (done["status"], done["attempts"]) == ("done", 2), done
    run_page = browser.get(f"{b}/jobs/{job_id}")
    assert re.search(r"/evidence/\d+$", run_page.url) and f"{STEPS:,}" in run_page.text
    engine = create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(text("evidence"))) == 1

    # An import through B crosses 80 %; the worker dies while handing the alert to SMTP.
    csv = toggl_csv([("Client 1", "Triage", first.isoformat(), "00:00:00", "08:30:00")])
    r = browser.post(f"{b}/imports", data={"csrf_token": csrf_of(browser, f"{b}/imports")},
                     files={"file": ("export.csv", csv)}, allow_redirects=False)
    preview = r.headers["Location"]
    upload_id = re.search(r"/imports/(\d+)/preview", preview).group(1)
    browser.post(f"{b}/imports/{upload_id}/confirm",
                 data={"csrf_token": csrf_of(browser, f"{b}{preview}")}).raise_for_status()
    wait_until(lambda: sink.stalled, 30, "the alert to reach SMTP")
    os.killpg(worker.pid, signal.SIGKILL)
    start("worker-3", "worker", "--threads", "1")

    def sent() -> bool:
        with engine.connect() as c:
            return c.scalar(text("SELECT status FROM jobs WHERE kind = 'alert_send'")) == "done"

    wait_until(sent, 60, "the alert job to be finished by another worker")
    with engine.connect() as c:
        assert c.scalar(text("SELECT attempts FROM jobs WHERE kind = 'alert_send'")) == 2
    engine.dispose()
    alerts = [m for m in sink.to("client@example.org") if "80 %" in m["Subject"]]
    assert len(alerts) == 1                                   # not sent again by the retry
    assert len([m for m in sink.to("consultant@example.com") if "80 %" in m["Subject"]]) == 1
