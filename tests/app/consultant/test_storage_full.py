"""A full disk answers an upload with HTTP 507 and says nothing was lost (not a bare 500), and keeps nothing
half-written: no upload row, no file."""

from __future__ import annotations

import errno
import io

from sqlalchemy import func, select

from hourtab.core.blobs import LocalBlobStore
from hourtab.timesheets.models import Upload
from tests.helpers.forms import csrf_token

CSV = (b"User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,Tags\n"
       b"Ada,ada@example.com,Acme,Web,,Work,Yes,2026-03-02,09:00:00,2026-03-02,10:00:00,01:00:00,\n")


def test_a_full_disk_answers_507_and_keeps_nothing(app, logged_in, monkeypatch):
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    for name in ("put_file", "put_bytes", "put_stream"):
        monkeypatch.setattr(LocalBlobStore, name, full)
    token = csrf_token(logged_in, "/imports")
    r = logged_in.post("/imports", data={"csrf_token": token, "file": (io.BytesIO(CSV), "export.csv")},
                       content_type="multipart/form-data")
    page = r.get_data(as_text=True)
    assert r.status_code == 507, page
    assert "storage is full; nothing was lost" in page and "No space left" not in page
    with app.extensions["hourtab.sessionmaker"]() as s:
        assert s.scalar(select(func.count()).select_from(Upload)) == 0
