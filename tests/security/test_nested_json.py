"""Deeply nested JSON is refused with a clear 400 or exit 2, wherever it arrives."""

from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from app.cli import cli
from hourtab.core.values import MAX_JSON_DEPTH, TooDeep, json_loads, nesting_depth
from incidents.writeups.models import IncidentEvidence
from tests.helpers.evidence_uploads import rewrite_wandb, stored_evidence, upload
from tests.helpers.forms import csrf_token, post_form

DEEP = "[" * 200_000 + "]" * 200_000
JUST_TOO_DEEP = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)


def test_depth_is_measured_outside_strings_and_escapes():
    assert nesting_depth('{"a": [1, {"b": "[[[[\\\\"}], "c": "\\" [[ {"}') == 3
    assert nesting_depth(json.dumps({"k": "a\\\"[[[\\\\", "x": [[1]]})) == 3
    assert json_loads(json.dumps({"a": [[{"b": 1}]]})) == {"a": [[{"b": 1}]]}
    with pytest.raises(TooDeep):
        json_loads(DEEP)
    with pytest.raises(TooDeep):
        json_loads(JUST_TOO_DEEP)


@pytest.mark.parametrize("name,data", [
    ("deep.json", DEEP),
    ("deep.jsonl", '{"_step": 0, "x": ' + DEEP + "}\n"),
    ("rows.json", '[{"_step": 0, "x": ' + JUST_TOO_DEEP + "}]"),
])
def test_evidence_upload_is_a_400_and_keeps_nothing(app, logged_in, name, data):
    r = upload(logged_in, name, data.encode())
    text = r.get_data(as_text=True)
    assert r.status_code == 400, text[-800:]
    assert "nested" in text and name in text
    assert stored_evidence(app) == (0, [])


def _incident(client) -> str:
    r = post_form(client, "/incidents", {"title": "Slow"})
    return r.headers["Location"].split("#")[0]


@pytest.mark.parametrize("name", ["profile.json", "trace.json"])
def test_profile_upload_is_a_400_and_attaches_nothing(app, logged_in, name):
    url = _incident(logged_in)
    token = csrf_token(logged_in, url)
    r = logged_in.post(url + "/evidence", data={"csrf_token": token, "profile": (io.BytesIO(DEEP.encode()), name)},
                       content_type="multipart/form-data")
    text = r.get_data(as_text=True)
    assert r.status_code == 400, text[-800:]
    assert "nested" in text
    with app.app_context():
        from app.db import get_db

        assert get_db().query(IncidentEvidence).count() == 0


def _deep_history_value(record):
    if record.WhichOneof("record_type") == "history" and record.history.item:
        record.history.item[0].value_json = DEEP
    return record


@pytest.fixture(scope="module")
def deep_wandb(hostile_run, tmp_path_factory):
    return rewrite_wandb(hostile_run["file"], tmp_path_factory.mktemp("deep") / "run-deep.wandb",
                         _deep_history_value)


def test_a_deep_value_inside_a_wandb_record_is_refused_by_the_cli(deep_wandb):
    r = CliRunner().invoke(cli, ["wandb", "inspect", str(deep_wandb)])
    assert r.exit_code == 2, r.output
    assert "nested" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_deep_value_inside_a_wandb_record_is_a_400_on_upload(app, logged_in, deep_wandb):
    r = upload(logged_in, "run-deep.wandb", deep_wandb.read_bytes())
    assert r.status_code == 400 and "nested" in r.get_data(as_text=True)
    assert stored_evidence(app) == (0, [])


@pytest.mark.parametrize("command", [["wandb", "inspect"], ["profile", "inspect"]])
def test_cli_refuses_a_deep_json_file(tmp_path, command):
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    r = CliRunner().invoke(cli, [*command, str(path)])
    assert r.exit_code == 2, r.output
    assert "nested" in r.output and "Traceback" not in r.output
