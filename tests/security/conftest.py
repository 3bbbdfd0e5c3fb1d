"""Helpers for the security suite: a real threaded HTTP server and browser-like sessions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests


def token_of(html: str) -> str:
    return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html).group(1)


def logged_in_session(base: str, email: str, password: str) -> requests.Session:
    s = requests.Session()
    token = token_of(s.get(f"{base}/login", timeout=30).text)
    r = s.post(f"{base}/login", data={"email": email, "password": password, "csrf_token": token},
               allow_redirects=False, timeout=60)
    assert r.status_code == 302, r.text
    return s


def at_once(n: int, fn) -> list:
    """Run ``fn(i)`` in ``n`` threads released together by a barrier; return the results in order."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        prepared = fn(i)
        barrier.wait(timeout=60)
        results[i] = prepared()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    return results


#: A run name with characters XML forbids and TeX that matplotlib's mathtext cannot parse.
HOSTILE_NAME = "bad\x01\x02\ufffe $\\frac{$ run"
HOSTILE_SCRIPT = r'''
import json, os, sys
out, name = sys.argv[1], sys.argv[2]
os.environ.update(WANDB_MODE="offline", WANDB_DIR=out, WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
import wandb
run = wandb.init(project="sec\x01urity", name=name, tags=["t\x02ag"], config={"lr": 0.1})
for i in range(30):
    wandb.log({"loss": 1.0 / (i + 1), "acc $x^{": i / 30, "train/step_time": 0.1})
run.finish()
wandb.teardown()
'''


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory) -> dict:
    """One real offline run written by the wandb SDK, with a hostile name and metric key."""
    root = tmp_path_factory.mktemp("hostile_run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    subprocess.run([sys.executable, "-c", HOSTILE_SCRIPT, str(root), HOSTILE_NAME], check=True, env=env,
                   timeout=240)
    file = next(root.rglob("run-*.wandb"))
    return {"file": file, "dir": file.parent, "clean_name": "bad $\\frac{$ run"}


def rewrite_wandb(src: Path, dst: Path, edit) -> Path:
    """Copy a real ``.wandb`` file record by record, passing each decoded record through ``edit``."""
    from wandb.proto.wandb_internal_pb2 import Record

    from incidents.evidence.wandb.framing import iter_records
    from tests.factories import write_records

    warnings: list[str] = []
    records = [Record.FromString(payload) for _, payload in iter_records(src, warnings)]
    assert not warnings
    with open(dst, "wb") as f:
        write_records(f, (edit(r).SerializeToString() for r in records))
    return dst


def upload(client, name: str, data: bytes, url: str = "/evidence"):
    """Upload ``data`` as a file called ``name`` through the evidence form, as a browser would."""
    import io

    from tests.helpers.forms import csrf_token

    token = csrf_token(client, url)
    return client.post(url, data={"csrf_token": token, "file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data")


def stored_evidence(app) -> tuple[int, list[str]]:
    """How many evidence rows the database holds, and every blob file kept on disk."""
    from sqlalchemy import func, select

    from incidents.evidence.models import Evidence

    with app.app_context():
        from app.db import get_db

        rows = get_db().scalar(select(func.count(Evidence.id)))
    blobs = Path(app.config["DATA_DIR"]) / "blobs"
    return rows, sorted(str(p.relative_to(blobs)) for p in blobs.rglob("*") if p.is_file()) \
        if blobs.exists() else []
