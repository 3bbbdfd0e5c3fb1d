"""Hostile input is refused with exit 2 and one line; exit codes are what CI reads (issue 21, items 5–6)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from app.cli import cli
from tests.helpers.audit_cli import SCRIPTS, script


@pytest.fixture(autouse=True)
def empty_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))


def refused(path, *args: str) -> str:
    """The one line ``hourtab audit`` refuses ``path`` with (exit 2, no traceback)."""
    result = CliRunner().invoke(cli, ["audit", str(path), *args])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output, result.output
    assert str(path.parent) not in result.output  # no server path in a message
    return result.output.strip()


@pytest.mark.parametrize("source, message", [
    ("x = " + "+".join(["1"] * 100_000) + "\n", "does not parse: expressions nested too deep for Python's parser"),
    ("x = " + "not " * 5_000 + "1\n", "does not parse: expressions nested too deep for Python's parser"),
    ("x = " + "-" * 50_000 + "1\n", "does not parse: Python's parser ran out of memory on it"),
    ("x = " + "(" * 300 + "1" + ")" * 300 + "\n", "train.py:1:"),
    ("x = " + "[" * 150 + "]" * 150 + "\n", "nested more than 100 levels deep; the audit refuses it"),
    ("import wandb\nwandb.watch(m, log_freq=" + "9" * 4_000 + ")\n",
     "train.py:2:25: an integer of 4,000 digits; the audit refuses integers over 100 digits"),
    ("x = 0x" + "f" * 5_000 + "\n", "train.py:1:5: an integer of 6,021 digits; the audit refuses integers over 100"),
    ("x = " + "9" * 5_000 + "\n", "does not parse: Exceeds the limit (4300 digits) for integer string conversion"),
    ("def main(:\n    pass\n", "train.py:1:10: does not parse: invalid syntax."),
])
def test_what_does_not_parse_is_refused_in_one_line(tmp_path, source, message):
    path = tmp_path / "train.py"
    path.write_text(source)
    assert message in refused(path)


def test_deep_but_parseable_calls_are_refused_before_the_walk_recurses(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import wandb\nwandb.watch(" + "f(" * 120 + "m" + ")" * 120 + ", log='all', log_freq=1)\n")
    assert "nested more than 100 levels deep" in refused(path)


def test_files_over_the_size_limit_are_refused_before_reading(tmp_path):
    path = tmp_path / "train.py"
    with path.open("wb") as f:  # 18 MB, as in the report; sparse, so the test writes almost nothing
        f.truncate(18 * 1024 * 1024)
    assert refused(path) == ("Error: train.py: 18,874,368 bytes, over the audit's limit of 1,048,576 "
                             "(raise it with --max-bytes).")
    small = tmp_path / "ok.py"
    small.write_text((SCRIPTS / "tiny_cpu.py.txt").read_text())
    assert "over the audit's limit of 100" in refused(small, "--max-bytes", "100")
    raised = CliRunner().invoke(cli, ["audit", str(small), "--max-bytes", "100000", "--json"])
    assert raised.exit_code == 1 and json.loads(raised.output)["findings"]


@pytest.mark.parametrize("data, message", [
    (b"import wandb\x00\n", "train.py: does not parse: source code string cannot contain null bytes."),
    (b"x = '\xff\xfe'\n", "train.py: cannot be read as UTF-8 text (byte 5)."),
])
def test_binary_input_is_refused(tmp_path, data, message):
    path = tmp_path / "train.py"
    path.write_bytes(data)
    assert refused(path) == f"Error: {message}"


def test_the_script_is_never_run_or_imported(tmp_path):
    canary = tmp_path / "canary"
    path = tmp_path / "train.py"
    path.write_text(f"import pathlib\npathlib.Path({str(canary)!r}).write_text('ran')\n"
                    "import wandb\nwandb.watch(model, log='all', log_freq=1)\n")
    CliRunner().invoke(cli, ["audit", str(path), "--params", "200000000"])
    assert not canary.exists()


WARN_ONLY = "from torch.utils.data import DataLoader\nloader = DataLoader(data, batch_size=8)\n"


@pytest.mark.parametrize("name, fail_on, code", [
    ("fixed_train", "error", 0),       # one info finding
    ("fixed_train", "warn", 0),
    ("fixed_train", "info", 1),
    ("warn_only", "error", 0),         # a DataLoader without workers: a warning
    ("warn_only", "warn", 1),
    ("incident_train", "error", 1),
])
def test_exit_status_follows_fail_on(tmp_path, name, fail_on, code):
    if name == "warn_only":
        path = tmp_path / "train.py"
        path.write_text(WARN_ONLY)
    else:
        path = script(tmp_path, name)
    result = CliRunner().invoke(cli, ["audit", str(path), "--fail-on", fail_on, "--json"])
    report = json.loads(result.output)
    assert result.exit_code == code, result.output
    assert report["schema"] == "hourtab.audit/1" and report["fail_on"] == fail_on and report["failed"] == bool(code)
    assert {"script", "run_steps", "model", "calibration", "counts", "flagged", "findings"} <= set(report)


def test_help_documents_the_exit_codes():
    text = CliRunner().invoke(cli, ["audit", "--help"]).output
    assert "--fail-on" in text and "--max-bytes" in text and "Exit status: 0" in " ".join(text.split())
    assert "never imported or run" in text
    assert CliRunner().invoke(cli, ["audit", "x.py", "--fail-on", "fatal"]).exit_code == 2


def test_operations_doc_states_the_cli_defaults():
    from pathlib import Path

    from app.cli.audit import audit

    doc = (Path(__file__).resolve().parents[4] / "docs" / "operations.md").read_text()
    defaults = {p.name: p.default for p in audit.params}
    assert f"`--fail-on` (default `{defaults['fail_on']}`)" in doc
    assert defaults["max_bytes"] == 1024 * 1024 and "`--max-bytes` (default 1 MiB)" in doc
    for code in ("| 0 |", "| 1 |", "| 2 |"):
        assert code in doc
