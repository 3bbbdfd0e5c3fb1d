"""``hourtab serve`` alone is the complete app: its own child consumer runs the queued jobs (SQLite queue)."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_serve_runs_queued_jobs_with_its_own_consumer(tmp_path, sqlite_template):
    import shutil

    import requests

    from tests.app.test_multihost import _csrf, _up, _wait

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
        _wait(lambda: _up(base), 60, "hourtab serve")
        s = requests.Session()
        s.post(f"{base}/signup", data={"csrf_token": _csrf(s, f"{base}/signup"), "email": "solo@example.com",
                                       "password": "a long enough password", "display_name": "Solo"})
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            z.writestr("../escape.txt", "refused by the worker, after the request returned")
        r = s.post(f"{base}/evidence", data={"csrf_token": _csrf(s, f"{base}/evidence")},
                   files={"file": ("bad.zip", buffer.getvalue())}, allow_redirects=False)
        job = r.headers["Location"]
        status = _wait(lambda: (j := s.get(f"{base}{job}.json").json())["status"] == "failed" and j, 60,
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
