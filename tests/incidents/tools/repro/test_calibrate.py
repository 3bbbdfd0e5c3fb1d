"""A calibration checks itself: a noisy or non-monotonic one is refused and nothing is saved (issue 21, item 4)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli
from incidents.tools.audit import checks
from incidents.tools.repro import calibrate

SIZES = (1_024, 16_384, 262_144, 1_048_576, 2_359_296)


def samples(seconds, sigma: float = 0.05, n: int = 24, seed: int = 0) -> dict[int, list[float]]:
    """``n`` samples per size around ``seconds(numel)``, log-normally scattered (``sigma`` of the log)."""
    rng = random.Random(seed)
    return {size: [seconds(size) * rng.lognormvariate(0.0, sigma) for _ in range(n)] for size in SIZES}


def judged(times: dict[int, list[float]]) -> list[str]:
    per_element, per_tensor = checks.fit([(size, s) for size, values in times.items() for s in values])
    return checks.problems(checks.size_timings(times), per_element, per_tensor)


def document(times: dict[int, list[float]]) -> dict:
    path = calibrate._path_document(times)
    return {"schema": calibrate.SCHEMA, "measured_at": "2026-12-01T00:00:00+00:00", "provenance": "test",
            "machine": {"cpu_count": 2, "torch_threads": 1, "load_average": {"before": [9.0], "after": [9.5]}},
            "checks": {"passed": not path["problems"], "attempts": 3, "problems": path["problems"]},
            "devices": {"cpu": {"gradients": path, "parameters": path}}}


def test_fit_recovers_a_line_and_ignores_interrupted_calls():
    clean = samples(lambda n: 20e-9 * n + 400e-6, sigma=0.0)
    per_element, per_tensor = checks.fit([(s, t) for s, v in clean.items() for t in v])
    assert per_element == pytest.approx(20e-9) and per_tensor == pytest.approx(400e-6)
    # one call in six preempted for 10 ms by a neighbour: the robust fit barely moves
    rng = random.Random(1)
    noisy = {s: [t + (0.010 if rng.random() < 1 / 6 else 0.0) for t in v] for s, v in clean.items()}
    per_element, per_tensor = checks.fit([(s, t) for s, v in noisy.items() for t in v])
    assert per_element == pytest.approx(20e-9, rel=0.15) and per_tensor == pytest.approx(400e-6, rel=0.5)


def test_clean_samples_pass():
    assert judged(samples(lambda n: 25e-9 * n + 600e-6)) == []


def test_samples_that_fall_as_tensors_grow_are_refused():
    # the calibration of the report: ~40 ms per tensor, the small tensors slower than the large ones
    falling = {1_024: 0.046, 16_384: 0.038, 262_144: 0.043, 1_048_576: 0.052, 2_359_296: 0.071}
    found = judged(samples(lambda n: falling[n]))
    assert found and found[0].startswith("samples fall as tensors grow (16,384 elements took 38")


def test_wide_spread_is_refused():
    # log-normal with sigma 1: the middle half spans about 1.45 medians, as wall-clock samples do under load
    found = judged(samples(lambda n: 25e-9 * n + 600e-6, sigma=1.0))
    assert any(p.startswith("samples at ") and "around their median (limit 100%)" in p for p in found)
    assert judged(samples(lambda n: 25e-9 * n + 600e-6, sigma=0.3)) == []  # CPU-time samples under load


def test_save_refuses_a_failing_calibration_and_writes_nothing(tmp_path):
    bad = document(samples(lambda n: 0.04 if n < 100_000 else 0.03))
    target = tmp_path / "data" / "watch-calibration.json"
    with pytest.raises(calibrate.CalibrationRefused) as refused:
        calibrate.save(bad, target)
    assert not target.exists() and not target.parent.exists()
    message = str(refused.value)
    assert message.startswith("Calibration not saved: ") and "\n" not in message
    assert "(after 3 attempt(s); 1-minute load average 9.5 on 2 cores, 1 torch thread(s))" in message
    good = document(samples(lambda n: 25e-9 * n + 600e-6))
    assert calibrate.save(good, target) == target and json.loads(target.read_text())["checks"]["passed"]


def test_a_stored_calibration_that_fails_its_checks_is_refused_by_audit_and_watchdog(tmp_path):
    stored = tmp_path / "data" / "watch-calibration.json"
    stored.parent.mkdir()
    bad = document(samples(lambda n: {1_024: 0.046, 16_384: 0.038}.get(n, 0.03 + n * 1e-8)))
    bad.pop("checks")  # written before calibrations checked themselves: its samples are checked on load
    stored.write_text(json.dumps(bad))
    script = tmp_path / "train.py"
    script.write_text("import wandb\nwandb.watch(model, log='all', log_freq=1)\n")
    env = {"HOURTAB_DATA_DIR": str(stored.parent)}
    audited = CliRunner().invoke(cli, ["audit", str(script), "--params", "1000000"], env=env)
    assert audited.exit_code == 2
    assert audited.output.startswith("Error: watch-calibration.json fails its own checks (cpu gradients: samples "
                                     "fall as tensors grow") and audited.output.count("\n") == 1
    (tmp_path / "wandb").mkdir()
    watched = CliRunner().invoke(cli, ["watchdog", str(tmp_path / "wandb"), "--once", "--calibration", str(stored)])
    assert watched.exit_code == 2 and "fails its own checks" in watched.output


def test_the_shipped_calibration_passes_its_own_checks():
    from incidents.tools.audit.cost import load_calibration

    shipped = load_calibration(environ={"HOURTAB_DATA_DIR": "/nonexistent"})
    assert shipped.origin.startswith("shipped default, not this machine")
    assert shipped.document["checks"]["passed"]
    for paths in shipped.document["devices"].values():
        for path in paths.values():
            assert checks.problems(path["samples"], path["per_element_ns"] * 1e-9, path["per_tensor_us"] * 1e-6) == []


@pytest.mark.torch
@pytest.mark.slow
def test_calibrate_cli_refuses_in_one_line_and_saves_nothing(tmp_path, monkeypatch, wandb_offline):
    """A real measurement held to a spread no real samples meet: refused, exit 2, nothing written."""
    pytest.importorskip("torch")
    monkeypatch.setattr(checks, "MAX_SPREAD", 0.0)
    monkeypatch.setattr(calibrate, "ROWS", 1)
    monkeypatch.setattr(calibrate, "ATTEMPTS", 2)
    target = tmp_path / "cal.json"
    result = CliRunner().invoke(cli, ["repro", "--calibrate", str(target), "--device", "cpu"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: Calibration not saved: cpu gradients: samples at ")
    assert "(limit 0%) (after 2 attempt(s); 1-minute load average " in result.output
    assert result.output.count("\n") == 1 and not target.exists()


def test_calibrate_refuses_a_folder_before_measuring(tmp_path):
    result = CliRunner().invoke(cli, ["repro", "--calibrate", str(tmp_path)])
    assert result.exit_code == 2 and "is a folder; give a file name" in result.output


def test_old_calibrations_still_load(tmp_path):
    """Calibrations written before the checks existed (no quartiles, no checks block) load when sane."""
    from incidents.tools.audit.cost import load_calibration

    old = {"devices": {"cpu": {kind: {"per_element_ns": 25.0, "per_tensor_us": 600.0,
                                      "samples": [{"numel": n, "seconds": 25e-9 * n + 600e-6} for n in SIZES]}
                               for kind in ("gradients", "parameters")}}}
    path = Path(tmp_path / "old.json")
    path.write_text(json.dumps(old))
    assert load_calibration(path).has("cpu") and not load_calibration(path).has("cuda")
