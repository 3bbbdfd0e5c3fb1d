"""The reproducer end to end on the tiny preset: real BERT, real wandb.watch, real W&B offline runs."""

from __future__ import annotations

import importlib.util
import json
import platform
import re
from pathlib import Path

import pytest

from tests.helpers.cli import TINY_ARGS, run_cli

# tiny_run (session-scoped, ~4 s of training) would be made on each worker: one xdist group makes it once.
pytestmark = [pytest.mark.torch, pytest.mark.xdist_group("tiny_run")]
SCHEMA = Path(__file__).resolve().parents[4] / "incidents" / "evidence" / "schemas" / "profile.schema.json"
TINY_TENSORS = 41


def by_mode(profile: dict) -> dict[str, dict]:
    return {m["mode"]: m for m in profile["modes"]}


def validate(profile: dict) -> None:
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(profile)


def test_profile_validates_and_names_this_machine(tiny_run):
    out, profile = tiny_run
    validate(profile)
    assert profile["machine"]["hostname"] == platform.node()
    assert profile["command"].startswith("hourtab repro --preset tiny --steps 6 --warmup 2 ")
    assert "--threads 1" in profile["command"] and "--out " in profile["command"]
    assert profile["hardware"]["device"] == "cpu" and profile["hardware"]["torch_threads"] == 1
    assert profile["versions"]["torch"] and profile["versions"]["wandb"]
    assert profile["model"]["parameter_tensors"] == profile["model"]["expected_parameter_tensors"] == TINY_TENSORS
    assert [m["mode"] for m in profile["modes"]] == ["baseline", "watch:all:1", "watch:gradients:100"]
    assert not profile["interrupted"] and all(m["complete"] and m["steps_measured"] == 6 for m in profile["modes"])


def test_watch_all_is_slower_and_its_hook_time_is_measured(tiny_run):
    _, profile = tiny_run
    modes = by_mode(profile)
    base, watch = modes["baseline"], modes["watch:all:1"]
    assert watch["mean_step_s"] > base["mean_step_s"]
    assert watch["ratio_to_baseline"] == pytest.approx(watch["mean_step_s"] / base["mean_step_s"])
    assert base["ratio_to_baseline"] == pytest.approx(1.0)
    assert base["hook_s"] == 0 and base["histograms_logged"] == 0 and base["logged"] is None
    assert watch["hook_s"] > 0 and 0 < watch["hook_share"] < 1
    assert watch["hook_s"] == pytest.approx(sum(watch["hook_times_s"]))
    assert len(watch["step_times_s"]) == 6
    assert watch["median_step_s"] <= watch["p90_step_s"] <= watch["max_step_s"]
    # log="all", log_freq=1: every tensor's gradient and parameter at each warm-up and measured step
    assert watch["histograms_logged"] == 2 * TINY_TENSORS * (2 + 6) and watch["logged"] is True
    top = watch["top_tensors"]
    # wandb prefixes names with ``graph_<n>`` when an earlier wandb.watch ran in the same process.
    assert 0 < len(top) <= 10
    assert all(re.match(r"(gradients|parameters)/(graph_\d+)?\.?(bert\.|.*(weight|bias)$)", t["name"]) for t in top)
    assert [t["total_ms"] for t in top] == sorted((t["total_ms"] for t in top), reverse=True)
    assert all(t["calls"] == 6 for t in top)
    assert watch["projected_run_s"] == pytest.approx(watch["mean_step_s"] * 11_250)
    assert watch["compute_share"] is not None and base["compute_share"] > watch["compute_share"]
    assert watch["device_utilization"] is None


def test_freq_100_that_never_fired_says_so(tiny_run):
    _, profile = tiny_run
    rare = by_mode(profile)["watch:gradients:100"]
    assert rare["histograms_logged"] == 0 and rare["logged"] is False
    assert "Did not log" in rare["note"] and "8 training steps" in rare["note"]


def test_freq_100_with_enough_steps_logs_once(freq100_run):
    _, profile = freq100_run
    (mode,) = profile["modes"]
    assert mode["training_steps"] == 100
    assert profile["model"]["parameter_tensors"] == 25  # one layer: 9 + 16
    assert mode["histograms_logged"] == 25 and mode["logged"] is True and mode["note"] is None
    assert max(mode["hook_times_s"]) == mode["hook_times_s"][-1] > 0  # the 100th backward pass logs
    assert profile["profiler"] is None


def test_profile_md_is_the_table(tiny_run):
    out, profile = tiny_run
    md = (out / "profile.md").read_text()
    modes = by_mode(profile)
    assert f"measured on {platform.node()}" in md
    assert "Compute share (CPU)" in md and "GPU util (NVML)" not in md and "not GPU utilisation" in md
    for name, mode in modes.items():
        row = next(line for line in md.splitlines() if line.startswith(f"| `{name}`"))
        assert f"{mode['mean_step_s'] * 1000:,.1f} ms" in row
        assert f"{mode['ratio_to_baseline']:.2f}×" in row
    assert "Did not log" in md
    assert "`gradients/bert.embeddings.word_embeddings.weight`" in md


def test_no_reference_incident_figure_is_written_by_the_reproducer():
    """The reference case's numbers must never pass for measurements: none is in the code that writes."""
    root = Path(__file__).resolve().parents[4]
    sources = [*(root / "incidents" / "tools" / "repro").glob("*.py"), root / "incidents" / "evidence" / "profiler.py",
               root / "app" / "cli" / "repro.py", SCHEMA]
    assert len(sources) > 5
    for path in sources:
        text = path.read_text()
        for figure in ("7.4 h", "7.4h", "11.5 %", "11.5%", "2,080", "2080", "52 min"):
            assert figure not in text, f"{figure!r} in {path.name}"


def test_wandb_runs_are_read_back_by_hourtabs_importer(tiny_run):
    out, profile = tiny_run
    from incidents.evidence.wandb import load_run

    for mode in profile["modes"]:
        folder = out / mode["wandb_run"]["dir"]
        assert folder.is_dir() and (folder / f"run-{mode['wandb_run']['id']}.wandb").is_file()
        result = run_cli(["wandb", "inspect", str(folder), "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["run_id"] == mode["wandb_run"]["id"]
        assert mode["mode"] in data["name"]
        assert "train/loss" in data["metrics"]
        evidence = load_run(folder)
        assert evidence.run_id == mode["wandb_run"]["id"]
    watched = json.loads(run_cli(["wandb", "inspect", str(out / by_mode(profile)["watch:all:1"]["wandb_run"]["dir"]),
                                  "--json"]).output)
    steps_logged = 2 + 6 + 2  # warm-up, measured, profiler warm-up and capture
    assert watched["histograms"]["gradients"] == watched["histograms"]["parameters"] == TINY_TENSORS * steps_logged
    baseline = json.loads(run_cli(["wandb", "inspect", str(out / by_mode(profile)["baseline"]["wandb_run"]["dir"]),
                                   "--json"]).output)
    assert baseline["histograms"]["gradients"] == 0


def test_profiler_capture_of_the_heaviest_mode_is_attributed(tiny_run):
    out, profile = tiny_run
    heaviest = max(profile["modes"], key=lambda m: m["mean_step_s"])
    assert profile["profiler"]["mode"] == heaviest["mode"] == "watch:all:1"
    assert not (out / ".profiler-scratch").exists()
    results = {}
    for name in ("table", "chrome_trace"):
        path = out / profile["profiler"][name]
        result = run_cli(["profile", "inspect", str(path), "--json"])
        assert result.exit_code == 0, result.output
        results[name] = json.loads(result.stdout)
        assert results[name]["steps"] == 1
        assert 0 < results[name]["watch_share"] < 1
        assert any(op["watch"] for op in results[name]["top_ops"])
        assert not any("No wandb.watch ranges" in w for w in results[name]["warnings"])
    assert results["table"]["watch_ms"] == pytest.approx(results["chrome_trace"]["watch_ms"], rel=0.01)
    summary = json.loads(run_cli(["profile", "inspect", str(out / "profile.json"), "--json"]).output)
    assert summary["kind"] == "hourtab-profile" and summary["mode"] == "watch:all:1"
    assert summary["watch_share"] == pytest.approx(by_mode(profile)["watch:all:1"]["hook_share"])
    assert summary["top_ops"] == results["table"]["top_ops"]


def test_existing_profile_is_never_overwritten(tiny_run):
    out, _ = tiny_run
    before = (out / "profile.json").read_bytes()
    result = run_cli(["repro", *TINY_ARGS, "--out", str(out)])
    assert result.exit_code == 2
    assert "already holds a profile.json" in result.output
    assert (out / "profile.json").read_bytes() == before


def test_fastwatch_mode(wandb_offline, tmp_path):
    out = tmp_path / "fast"
    args = ["repro", "--preset", "tiny", "--layers", "1", "--seq-len", "16", "--modes", "baseline,fastwatch:all:1",
            "--steps", "3", "--warmup", "1", "--profile-steps", "0", "--threads", "1", "--no-progress",
            "--out", str(out)]
    if importlib.util.find_spec("incidents.tools.fastwatch") is None:
        result = run_cli(args)
        assert result.exit_code == 1
        assert "incidents.tools.fastwatch" in result.output and "run the other modes" in result.output
        assert not out.exists()
        return
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    profile = json.loads((out / "profile.json").read_text())
    validate(profile)
    fast = by_mode(profile)["fastwatch:all:1"]
    assert fast["hook_s"] > 0 and fast["hook_share"] > 0 and fast["ratio_to_baseline"] is not None
    tensors = 9 + 16 * 1
    assert fast["histograms_logged"] == 2 * tensors * (1 + 3) and fast["logged"] is True
    assert fast["watch_thread_cpu_s"] is not None and fast["top_tensors"] == []
    data = json.loads(run_cli(["wandb", "inspect", str(out / fast["wandb_run"]["dir"]), "--json"]).output)
    assert data["histograms"]["gradients"] == data["histograms"]["parameters"] == tensors * (1 + 3)


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_keeps_what_was_measured(wandb_offline, tmp_path):
    """A real SIGINT to a real `hourtab repro` process, once it has measured a few baseline steps."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import threading
    import time

    out = tmp_path / "interrupted"
    command = [sys.executable, "-c", "from app.cli import main; main()", "repro", "--preset", "tiny",
               "--layers", "1", "--seq-len", "16", "--modes", "baseline,watch:all:1", "--warmup", "1",
               "--steps", "100000", "--threads", "1", "--out", str(out)]
    # A shell runs background jobs (CI, nohup … &) with SIGINT ignored, and a child inherits that:
    # Python then installs no KeyboardInterrupt handler. Give the child the terminal's default.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parents[4],
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: process.stderr.read(64), "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # tqdm's "baseline: … n/total" on stderr
            counts = [int(n) for n in re.findall(r"baseline:[^|]*\|[^|]*\| *(\d+)/", "".join(seen))]
            if counts and max(counts) >= 6 or process.poll() is not None:
                break
            time.sleep(0.2)
        assert process.poll() is None, "".join(seen)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
    reader.join(timeout=5)
    process.stdout.close()
    process.stderr.close()
    assert process.returncode == 130, "".join(seen)
    assert "Interrupted: kept the steps measured" in "".join(seen)
    profile = json.loads((out / "profile.json").read_text())
    validate(profile)
    assert profile["interrupted"] is True
    (mode,) = profile["modes"]  # watch:all:1 never started
    assert mode["mode"] == "baseline" and mode["complete"] is False and mode["steps_measured"] >= 5
    assert mode["mean_step_s"] > 0 and "Interrupted" in (out / "profile.md").read_text()
    from incidents.evidence.wandb import load_run

    assert load_run(out / mode["wandb_run"]["dir"]).run_id == mode["wandb_run"]["id"]


@pytest.mark.gpu
def test_cuda_run_samples_nvml_and_times_with_events(wandb_offline, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    out = tmp_path / "cuda"
    result = run_cli(["repro", "--preset", "tiny", "--device", "cuda", "--modes", "baseline,watch:all:1",
                      "--steps", "20", "--warmup", "3", "--profile-steps", "1", "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    profile = json.loads((out / "profile.json").read_text())
    validate(profile)
    assert profile["hardware"]["device"] == "cuda" and profile["hardware"]["gpu_name"]
    for mode in profile["modes"]:
        assert mode["phase_timer"] == "cuda-events" and mode["compute_share"] is None
        util = mode["device_utilization"]
        assert util["error"] is None and util["samples"] > 0 and util["sampling_hz"] >= 10
    modes = by_mode(profile)
    assert modes["watch:all:1"]["mean_step_s"] > modes["baseline"]["mean_step_s"]
    assert "GPU util (NVML)" in (out / "profile.md").read_text()
    trace = json.loads(run_cli(["profile", "inspect", str(out / profile["profiler"]["chrome_trace"]), "--json"]).output)
    assert trace["watch_share"] > 0 and trace["device_busy_ms"] > 0


def test_interleaved_rounds_report_median_spread_cpu_time_and_load(wandb_offline, tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "rounds"
    result = run_cli(["repro", "--preset", "tiny", "--layers", "1", "--seq-len", "16", "--steps", "2",
                      "--warmup", "1", "--profile-steps", "0", "--threads", "1", "--no-progress", "--rounds", "2",
                      "--modes", "baseline,fastwatch:all:1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    profile = json.loads((out / "profile.json").read_text())
    validate(profile)
    assert profile["settings"]["rounds"] == 2
    assert len(profile["machine"]["load_average_before"]) == len(profile["machine"]["load_average_after"]) == 3
    for mode in profile["modes"]:
        assert len(mode["rounds"]) == 2 and mode["steps_measured"] == 4
        medians = [r["median_step_s"] for r in mode["rounds"]]
        assert mode["round_spread_s"] == pytest.approx(max(medians) - min(medians))
        assert mode["round_median_step_s"] == pytest.approx(sum(medians) / 2)
        assert mode["cpu_s"] == pytest.approx(sum(r["cpu_s"] for r in mode["rounds"])) and mode["cpu_s"] > 0
    fast = by_mode(profile)["fastwatch:all:1"]
    base = by_mode(profile)["baseline"]
    assert fast["cpu_ratio_to_baseline"] == pytest.approx(fast["cpu_s"] / base["cpu_s"])
    assert "needs a spare CPU core" in result.output and "CPU time" in result.output
    assert "× baseline (CPU time)" in (out / "profile.md").read_text()
    # Each round's W&B run states its own steps, not the mode's pooled so far (a report cites it as that run's).
    from incidents.evidence.wandb import load_run

    summaries = [load_run(folder).summary for folder in sorted((out / "wandb").glob("offline-run-*"))]
    assert len(summaries) == 4 and {s["repro/steps_measured"] for s in summaries} == {2}
