"""Upload errors name the file by the name it was uploaded under, never by a server-side path."""

from __future__ import annotations

import html
import io
import os
import re
import tempfile

import pytest

from tests.helpers.evidence_uploads import stored_evidence, upload
from tests.helpers.forms import csrf_token, post_form

RANDOM = os.urandom(4096)
SERVER_SIDE = re.compile(re.escape(tempfile.gettempdir()) + r"|hourtab-(upload|archive)-|\bupload\.[a-z.]+\b|/x/")


@pytest.mark.parametrize("name", ["x.wandb", "x.parquet", "x.jsonl", "x.json", "x.csv", "x.zip", "x.tar.gz"])
def test_random_bytes_are_refused_naming_the_upload_only(app, logged_in, name):
    r = upload(logged_in, name, RANDOM)
    text = html.unescape(r.get_data(as_text=True))
    assert r.status_code == 400, text[-800:]
    message = re.search(r'class="(?:errors|error)[^"]*"[^>]*>(.*?)</', text, re.S)
    assert name in text, text[-1500:]
    assert not SERVER_SIDE.search(text), (SERVER_SIDE.search(text).group(0), message and message.group(1))
    assert stored_evidence(app) == (0, [])


def test_a_wandb_file_inside_an_archive_is_named_by_its_place_in_the_archive(app, logged_in):
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("offline-run-1/run-abc.wandb", RANDOM)
    r = upload(logged_in, "mine.zip", buffer.getvalue())
    text = html.unescape(r.get_data(as_text=True))
    assert r.status_code == 400
    assert "run-abc.wandb" in text and not SERVER_SIDE.search(text), SERVER_SIDE.search(text)


def test_profile_upload_of_random_bytes_names_the_profile(app, logged_in):
    url = post_form(logged_in, "/incidents", {"title": "Slow"}).headers["Location"].split("#")[0]
    token = csrf_token(logged_in, url)
    r = logged_in.post(url + "/evidence", data={"csrf_token": token, "profile": (io.BytesIO(RANDOM), "p.json")},
                       content_type="multipart/form-data")
    text = html.unescape(r.get_data(as_text=True))
    assert r.status_code == 400, text[-800:]
    assert "p.json" in text and not SERVER_SIDE.search(text), SERVER_SIDE.search(text)
