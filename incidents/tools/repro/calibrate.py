"""Measure what one ``wandb.watch`` histogram costs on this machine, for ``hourtab audit`` to predict with.

``wandb.watch`` calls ``TorchHistory.log_tensor_stats`` once per tensor and logging step (parameters
are first copied to the host with ``.cpu()``). We call exactly that, in a real W&B offline run, on
tensors of several sizes, and fit ``seconds = per_element × numel + per_tensor``
(``incidents.tools.audit.checks``): the per-element cost (clone, finiteness checks, min/max,
``histc``) and the fixed cost per tensor (kernel launches, the ``wandb.Histogram``). The gradient
path is measured on every device; the parameter path adds the ``.cpu()`` copy, so it is measured
separately on a GPU (on the CPU it is the same call).

The machine this runs on may be busy, so the measurement is built to survive it and to say when it
did not: sizes are visited in a shuffled order within each row (a neighbour's burst hits all sizes
alike instead of one), each size is repeated ``rows × COPIES`` times and summarised by its median,
the fit is robust, the document records the load average, the torch threads and how much longer
wall time ran than CPU time. If the samples still fail their checks (medians falling as tensors
grow, too wide a spread, a line that misses them) the whole measurement is repeated, up to
``ATTEMPTS`` times, and then refused: nothing is saved, and the one-line error says why.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import wandb

from incidents.errors import InvalidEvidence
from incidents.tools.audit import checks
from incidents.tools.repro.model import require_torch
from incidents.tools.repro.modes import InvalidReproArgument

SCHEMA = "hourtab.watch-calibration/1"
FILE_NAME = "watch-calibration.json"
SIZES = (1_024, 16_384, 262_144, 1_048_576, 2_359_296)
#: Tensors of each size per logged row, so a row holds as many histograms as a small model's step.
COPIES = 4
ROWS = 6
ATTEMPTS = 3
METHOD = ("wandb TorchHistory.log_tensor_stats (what wandb.watch calls per tensor) timed in an offline W&B run: "
          "rows of {copies} tensors each of {sizes} elements in a shuffled order, logged as wandb.watch logs a step; "
          "{samples} samples per size, summarised by their median and interquartile spread; a Huber-weighted fit "
          "on relative error of seconds = per_element × numel + per_tensor; checked (medians that do not fall as "
          "tensors grow, spread ≤ {spread:.0%}, fit within {fit:.0%}) before it is saved")


class CalibrationRefused(InvalidEvidence):
    """Samples too noisy or inconsistent to predict with; nothing was saved."""


def default_path(environ: dict[str, str] | None = None) -> Path:
    """Where calibrations are kept: ``<HOURTAB_DATA_DIR>/watch-calibration.json`` (data dir ./instance)."""
    env = os.environ if environ is None else environ
    return Path(env.get("HOURTAB_DATA_DIR") or "instance") / FILE_NAME


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _time_call(history: Any, torch: Any, tensor: Any, name: str, to_host: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one histogram call."""
    if tensor.is_cuda:
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter(), time.thread_time()
    history.log_tensor_stats(tensor.cpu() if to_host else tensor, name)
    if tensor.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - wall, time.thread_time() - cpu


def _measure_path(run: Any, torch: Any, tensors: dict[int, Any], kind: str, to_host: bool, rows: int,
                  shuffle: random.Random, cpu_clock: bool) -> tuple[dict[int, list[float]], list[float]]:
    """Per size, the seconds of ``rows × COPIES`` calls (thread CPU time when ``cpu_clock``, else wall);
    and every call's wall ÷ CPU time."""
    history = run._torch
    times: dict[int, list[float]] = {size: [] for size in tensors}
    ratios: list[float] = []
    order = [(size, copy) for size in tensors for copy in range(COPIES)]
    for row in range(rows + 1):
        shuffle.shuffle(order)
        for size, copy in order:
            wall, cpu = _time_call(history, torch, tensors[size], f"{kind}/layer{copy}.t{size}", to_host)
            if row:  # the first row warms up allocations and kernels
                times[size].append(cpu if cpu_clock else wall)
                if cpu > 0:
                    ratios.append(wall / cpu)
        run.log({}, commit=True)
    return times, ratios


def _path_document(times: dict[int, list[float]]) -> dict[str, Any]:
    per_element, per_tensor = checks.fit([(size, s) for size, values in times.items() for s in values])
    rows = checks.size_timings(times)
    return {"per_element_ns": per_element * 1e9, "per_tensor_us": per_tensor * 1e6, "samples": rows,
            "problems": checks.problems(rows, per_element, per_tensor)}


def _measure_device(run: Any, torch: Any, device: str, sizes: tuple[int, ...], rows: int,
                    seed: int) -> tuple[dict[str, Any], list[float]]:
    # One torch thread on the CPU does all its work on the calling thread, so that thread's CPU time is
    # the work itself, whatever the neighbours do; with more threads, or a GPU, only wall time counts it.
    cpu_clock = device == "cpu" and torch.get_num_threads() == 1
    generator = torch.Generator().manual_seed(0)
    tensors = {size: torch.randn(size, generator=generator).to(device) for size in sizes}
    shuffle = random.Random(seed)
    paths: dict[str, Any] = {}
    ratios: list[float] = []
    for kind, to_host in (("gradients", False), ("parameters", True)):
        if kind == "parameters" and device == "cpu":
            paths[kind] = {**paths["gradients"], "note": "on the CPU wandb's parameter path is the gradient path "
                                                         "(.cpu() is a no-op): measured once"}
            continue
        times, path_ratios = _measure_path(run, torch, tensors, kind, to_host, rows, shuffle, cpu_clock)
        paths[kind] = {**_path_document(times), "clock": "thread CPU time" if cpu_clock else "wall time"}
        ratios += path_ratios
    return paths, ratios


def calibrate(device: str = "auto", rows: int | None = None, threads: int | None = None,
              sizes: tuple[int, ...] = SIZES, attempts: int | None = None) -> dict[str, Any]:
    """Measure the CPU (and the GPU when present, or asked for) and return the calibration document;
    its ``checks.passed`` is False when every attempt failed its checks. One torch thread unless
    ``threads`` says otherwise (then the CPU is timed by the wall clock, and so by the machine's load)."""
    torch, _ = require_torch()
    rows = ROWS if rows is None else rows
    attempts = ATTEMPTS if attempts is None else attempts
    if device not in {"auto", "cpu", "cuda"}:
        raise InvalidReproArgument(f"--device must be auto, cpu or cuda, not {device!r}.")
    if device == "cuda" and not torch.cuda.is_available():
        raise InvalidReproArgument("--device cuda was asked for but torch sees no CUDA device here.")
    if rows < 1 or attempts < 1:
        raise InvalidReproArgument("rows and attempts must be at least 1.")
    torch.set_num_threads(threads if threads is not None else 1)
    devices = ["cpu"] if device == "cpu" else ["cuda"] if device == "cuda" else \
        ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    load_before = _load_average()
    with tempfile.TemporaryDirectory(prefix="hourtab-calibrate-") as scratch:
        run = wandb.init(project="hourtab-calibration", dir=scratch, mode="offline",
                         settings=wandb.Settings(silent=True, console="off", disable_git=True))
        try:
            for attempt in range(1, attempts + 1):
                measured, ratios = {}, []
                for d in devices:
                    measured[d], device_ratios = _measure_device(run, torch, d, sizes, rows, seed=attempt)
                    ratios += device_ratios
                failing = [f"{d} {kind}: {path['problems'][0]}" for d, paths in measured.items()
                           for kind, path in paths.items() if path["problems"] and "note" not in path]
                if not failing:
                    break
        finally:
            run.finish()
    gpu = torch.cuda.get_device_name(0) if "cuda" in devices else None
    spreads = [row["spread"] for paths in measured.values() for path in paths.values() for row in path["samples"]]
    return {
        "schema": SCHEMA,
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "provenance": f"measured by `hourtab repro --calibrate` on {platform.node() or 'this machine'}",
        "machine": {"hostname": platform.node(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "gpu": gpu,
                    "load_average": {"before": load_before, "after": _load_average()},
                    "wall_over_cpu_time": round(statistics.median(ratios), 2) if ratios else None,
                    "torch": torch.__version__, "wandb": wandb.__version__, "python": platform.python_version()},
        "method": METHOD.format(copies=COPIES, sizes=", ".join(f"{s:,}" for s in sizes), samples=rows * COPIES,
                                spread=checks.MAX_SPREAD, fit=checks.MAX_FIT_ERROR),
        "checks": {"passed": not failing, "attempts": attempt, "problems": failing,
                   "max_spread": round(max(spreads), 3) if spreads else None, "spread_limit": checks.MAX_SPREAD,
                   "fit_error_limit": checks.MAX_FIT_ERROR},
        "devices": measured,
    }


def refusal(calibration: dict[str, Any]) -> str | None:
    """The one line that says why ``calibration`` must not be saved, or None when it passed its checks."""
    result = calibration.get("checks") or {}
    if result.get("passed"):
        return None
    machine = calibration.get("machine") or {}
    load = ((machine.get("load_average") or {}).get("after") or [None])[0]
    busy = f"1-minute load average {load:.1f} on {machine.get('cpu_count')} cores, " if load is not None else ""
    return (f"Calibration not saved: {'; '.join(result.get('problems') or ['it failed its checks'])} "
            f"(after {result.get('attempts', 1)} attempt(s); {busy}{machine.get('torch_threads')} torch "
            "thread(s)). Rerun when the machine is quieter, or with --threads 1.")


def save(calibration: dict[str, Any], path: Path) -> Path:
    """Write the calibration as JSON (creating the folder), unless it failed its checks."""
    reason = refusal(calibration)
    if reason is not None:
        raise CalibrationRefused(reason)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(calibration, indent=2) + "\n")
    return path


def calibrate_and_store(target: str | None, device: str = "auto", threads: int | None = None) -> tuple[Path, dict]:
    """``hourtab repro --calibrate [PATH]``: measure, check, then write to PATH or the data dir's file."""
    path = Path(target) if target else default_path()
    if path.is_dir():
        raise InvalidReproArgument(f"--calibrate {path.name} is a folder; give a file name (or none for the data dir).")
    calibration = calibrate(device=device, threads=threads)
    return save(calibration, path), calibration


def summary_lines(calibration: dict[str, Any]) -> list[str]:
    """One line per device and path: what a histogram costs here, and how the samples held up."""
    lines = [f"  {device:<5} {kind:<10} {path['per_element_ns']:.2f} ns per element + {path['per_tensor_us']:.0f} µs "
             f"per tensor ({path.get('clock', 'wall time')})" for device, paths in calibration["devices"].items()
             for kind, path in paths.items()]
    machine, result = calibration["machine"], calibration["checks"]
    load = machine["load_average"]["before"]
    lines.append(f"  checks passed on attempt {result['attempts']}: widest spread {result['max_spread']:.0%} "
                 f"(limit {result['spread_limit']:.0%}); load average {load[0] if load else 'unknown'}, "
                 f"wall ÷ CPU time {machine['wall_over_cpu_time']}")
    return lines
