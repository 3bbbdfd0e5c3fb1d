"""Profiler ingestion: real captures from tests/data/profiles and hand-built traces with known answers."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from incidents.errors import EvidenceNotFound
from incidents.evidence.profile_inspection import InvalidProfile
from incidents.evidence.profiler import inspect_profile

DATA = Path(__file__).resolve().parents[2] / "data" / "profiles"
REPRO = DATA / "repro"
KEYS = {"kind", "steps", "total_ms", "watch_ms", "watch_share", "top_ops", "warnings"}


def cli(*args: str):
    from app.cli import cli as group

    return CliRunner().invoke(group, list(args))


def test_labelled_table_and_trace_of_the_same_capture_agree():
    table = inspect_profile(REPRO / "profiler" / "key_averages.txt")
    trace = inspect_profile(REPRO / "profiler" / "trace.json.gz")
    assert (table.kind, trace.kind) == ("key-averages-table", "chrome-trace")
    assert table.steps == trace.steps == 1
    assert table.total_ms == pytest.approx(trace.total_ms, rel=0.01)
    assert table.watch_ms == pytest.approx(trace.watch_ms, rel=0.01)
    for phase in ("forward_ms", "backward_ms", "optimizer_ms"):
        assert getattr(table, phase) == pytest.approx(getattr(trace, phase), rel=0.01)
    assert 0 < table.watch_share < 1
    assert table.forward_ms + table.backward_ms + table.optimizer_ms <= table.total_ms
    assert [op["name"] for op in table.top_ops[:3]] == [op["name"] for op in trace.top_ops[:3]]
    assert any(op["name"] == "aten::histc" and op["watch"] for op in trace.top_ops)
    assert not table.warnings and not trace.warnings


def test_plain_gz_and_uncompressed_trace_read_the_same(tmp_path):
    plain = tmp_path / "trace.json"
    with gzip.open(REPRO / "profiler" / "trace.json.gz", "rb") as f, plain.open("wb") as g:
        shutil.copyfileobj(f, g)
    assert inspect_profile(plain).to_dict() == inspect_profile(REPRO / "profiler" / "trace.json.gz").to_dict()


def test_unlabelled_capture_falls_back_to_wandbs_ops_and_says_so():
    for name in ("plain_watch.key_averages.txt", "plain_watch.trace.json.gz"):
        result = inspect_profile(DATA / name)
        assert result.steps == 3
        assert result.watch_ms > 0
        assert any("No wandb.watch ranges" in w for w in result.warnings)
        assert result.optimizer_ms and result.backward_ms
    table = inspect_profile(DATA / "plain_watch.key_averages.txt")
    trace = inspect_profile(DATA / "plain_watch.trace.json.gz")
    assert table.forward_ms is None and trace.forward_ms > 0  # only a trace shows where backward begins
    assert table.total_ms == pytest.approx(trace.total_ms, rel=0.01)


def test_our_profile_json_uses_its_profiled_mode_and_table():
    result = inspect_profile(REPRO / "profile.json")
    profile = json.loads((REPRO / "profile.json").read_text())
    mode = next(m for m in profile["modes"] if m["mode"] == profile["profiler"]["mode"])
    assert result.kind == "hourtab-profile" and result.mode == mode["mode"]
    assert result.steps == len(mode["step_times_s"])
    assert result.total_ms == pytest.approx(sum(mode["step_times_s"]) * 1000)
    assert result.watch_share == pytest.approx(mode["hook_share"])
    assert result.top_ops == inspect_profile(REPRO / "profiler" / "key_averages.txt").top_ops
    assert "baseline" in result.warnings[0]


def trace(events: list[dict]) -> dict:
    return {"schemaVersion": 1, "traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0}, *events]}


def ev(name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = 1) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def test_hand_built_trace_nesting_and_overlaps_counted_once(tmp_path):
    # Two 1,000 µs steps. Step 0: a labelled watch range 100-400 with histc (150-350) nested,
    # plus a second range 300-500 overlapping it: watch covers 100-500 = 400 µs.
    # Step 1: one labelled range 1,200-1,300 = 100 µs. Watch 500 µs of 2,000 µs → 25 %.
    events = [
        ev("ProfilerStep#0", 0, 1000, "user_annotation"), ev("ProfilerStep#1", 1000, 1000, "user_annotation"),
        ev("wandb.watch.log_tensor_stats", 100, 300, "user_annotation"), ev("aten::histc", 150, 200),
        ev("wandb.watch.log_tensor_stats", 300, 200, "user_annotation", tid=2),
        ev("wandb.watch.log_tensor_stats", 1200, 100, "user_annotation"),
        ev("repro.forward", 0, 90, "user_annotation"), ev("repro.backward", 90, 600, "user_annotation"),
        ev("repro.optimizer", 700, 250, "user_annotation"), ev("aten::mm", 10, 50),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace(events)))
    result = inspect_profile(path)
    assert result.steps == 2 and result.total_ms == pytest.approx(2.0)
    assert result.watch_ms == pytest.approx(0.5) and result.watch_share == pytest.approx(0.25)
    assert (result.forward_ms, result.backward_ms, result.optimizer_ms) == pytest.approx((0.09, 0.6, 0.25))
    ops = {op["name"]: op for op in result.top_ops}
    # self time: the first range 300 − 200 of nested histc; the other two have no children
    assert ops["wandb.watch.log_tensor_stats"]["self_ms"] == pytest.approx(0.1 + 0.2 + 0.1)
    assert ops["wandb.watch.log_tensor_stats"]["calls"] == 3
    assert ops["aten::histc"]["self_ms"] == pytest.approx(0.2) and ops["aten::histc"]["watch"]
    assert ops["repro.forward"]["self_ms"] == pytest.approx(0.04) and not ops["aten::mm"]["watch"]
    assert "ProfilerStep#0" not in ops


def test_json_output_shape_and_text_output():
    result = cli("profile", "inspect", str(REPRO / "profiler" / "key_averages.txt"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert KEYS <= set(data)
    assert data["kind"] == "key-averages-table"
    assert {"name", "self_ms", "total_ms", "calls", "watch"} <= set(data["top_ops"][0])
    text = cli("profile", "inspect", str(DATA / "plain_watch.trace.json.gz"))
    assert text.exit_code == 0
    assert "chrome-trace, 3 steps" in text.output and "watch work" in text.output and "note:" in text.output


@pytest.mark.parametrize("name, content, fragment", [
    ("empty.json", b"", "not a profile we can read"),
    ("binary.bin", b"\x00\x01\x02PK\x03\x04", "binary file"),
    ("cut.json", b'{"traceEvents": [{"ph": "X", ', "not valid JSON (line 1"),
    ("other.json", b'{"hello": 1}', "neither an HourTab profile.json"),
    ("events.json", b'{"traceEvents": {"a": 1}}', "'traceEvents' is not a list"),
    ("nodur.json", b'{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1}]}', "traceEvents[0]"),
    ("noX.json", b'{"traceEvents": [{"ph": "M", "name": "x"}]}', "no complete"),
    ("bad.gz", b"\x1f\x8b\x08\x00garbage", "damaged gzip"),
    ("latin1.txt", "Name  Self CPU % caf\xe9".encode("latin-1"), "not UTF-8"),
    ("prose.txt", b"Self CPU time total: 3ms\nhello\n", "not a profile we can read"),
    ("oldschema.json", b'{"schema": "hourtab.repro.profile", "schema_version": 9, "modes": []}',
     "schema_version 9"),
    ("nomodes.json", b'{"schema": "hourtab.repro.profile", "schema_version": 1, "modes": []}',
     "no mode has measured steps"),
])
def test_malformed_files_are_refused_with_exit_2(tmp_path, name, content, fragment):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InvalidProfile, match=None) as info:
        inspect_profile(path)
    assert fragment in str(info.value)
    result = cli("profile", "inspect", str(path), "--json")
    assert result.exit_code == 2
    assert fragment in result.output and "Traceback" not in result.output


def test_damaged_table_names_its_line(tmp_path):
    lines = (REPRO / "profiler" / "key_averages.txt").read_text().splitlines()
    row = 3  # first data row: header rule, header, rule, then rows
    lines[row] = lines[row].replace("ms ", "xx ", 1)
    path = tmp_path / "table.txt"
    path.write_text("\n".join(lines))
    with pytest.raises(InvalidProfile, match=f"line {row + 1}"):
        inspect_profile(path)


def test_missing_file(tmp_path):
    with pytest.raises(EvidenceNotFound):
        inspect_profile(tmp_path / "nope.json")
    result = cli("profile", "inspect", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and "no such file" in result.output
