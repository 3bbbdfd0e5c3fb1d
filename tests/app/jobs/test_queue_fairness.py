"""One account cannot stall the rest: a 100,000-member zip is refused from its directory in under a
second, and another account's upload is not kept waiting behind two of them (one worker thread).

Real parts: uploads through the web form, the SQLite queue, the worker's own thread, both databases.
"""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.helpers.evidence_uploads import upload, zip_bytes
from tests.helpers.forms import signup

pytestmark = pytest.mark.slow
MEMBERS = 100_000


def many_members_zip(cache: Path, variant: int = 0) -> bytes:
    """A zip of 100,000 empty files (8.8 MB), built once per machine; variants differ in one name."""
    path = cache / f"empty-{MEMBERS}-{variant}.zip"
    if not path.exists():
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            for i in range(MEMBERS):
                z.writestr(f"run/files/f{i}" + ("" if i else f"-{variant}"), b"")
        path.write_bytes(buffer.getvalue())
    return path.read_bytes()


def test_a_100000_member_zip_is_refused_from_its_directory_in_under_a_second(request, tmp_path):
    from incidents.evidence.archives import UnsafeArchive, list_members

    path = tmp_path / "many.zip"
    path.write_bytes(many_members_zip(request.config.cache.mkdir("hourtab-many-members")))
    started = time.perf_counter()
    with pytest.raises(UnsafeArchive, match="more than 10,000 members"):
        list_members(path)
    assert time.perf_counter() - started < 1.0


@pytest.mark.torch
def test_another_accounts_upload_is_not_kept_behind_two_huge_archives(make_app, request, wandb_runs):
    from app.jobs.worker import Worker
    from hourtab.core.jobs import Job

    app = make_app(QUEUE_IMMEDIATE=False, HOURTAB_JOB_LEASE_S="3")
    cache = request.config.cache.mkdir("hourtab-many-members")
    heavy, light = app.test_client(), app.test_client()
    signup(heavy, email="heavy@example.com")
    signup(light, email="light@example.com")
    for i in range(2):            # queued before the other account's, with one worker thread for all
        assert upload(heavy, f"huge-{i}.zip", many_members_zip(cache, i)).status_code == 302
    run = next(iter(wandb_runs.values()))
    assert upload(light, "run.zip", zip_bytes(run["dir"])).status_code == 302

    worker = Worker(app, threads=1)
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with app.extensions["hourtab.sessionmaker"]() as s:
                jobs = s.scalars(select(Job).order_by(Job.created_at)).all()
            if all(j.status in ("done", "failed") for j in jobs):
                break
            time.sleep(0.1)
    finally:
        worker.stop()
    huge, small = jobs[:2], jobs[2]
    for job in huge:
        assert job.status == "failed" and "more than 10,000 members" in job.error
        assert (job.finished_at - job.started_at).total_seconds() < 1.0       # refused from its directory
    assert small.status == "done", small.error
    assert small.started_at < huge[1].started_at       # the other account went second, not third
