"""Measure what one ``wandb.watch`` histogram costs on this machine, for ``hourtab audit`` to predict with.

``wandb.watch`` calls ``TorchHistory.log_tensor_stats`` once per tensor and logging step (parameters
are first copied to the host with ``.cpu()``). We call exactly that, in a real W&B offline run, on
tensors of several sizes, and fit ``seconds = per_element × numel + per_tensor`` by least squares:
the per-element cost (clone, finiteness checks, min/max, ``histc``) and the fixed cost per tensor
(kernel launches, the ``wandb.Histogram`` and its message to the W&B service). Both the gradient
path and the parameter path (with its ``.cpu()`` copy) are fitted, on the CPU and, when torch sees
one, on the GPU.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from incidents.tools.repro.model import require_torch
from incidents.tools.repro.modes import InvalidReproArgument

SCHEMA = "hourtab.watch-calibration/1"
FILE_NAME = "watch-calibration.json"
SIZES = (1_024, 16_384, 262_144, 1_048_576, 2_359_296)
#: Tensors of each size per logged row, so a row holds as many histograms as a small model's step.
COPIES = 4
METHOD = ("wandb TorchHistory.log_tensor_stats (what wandb.watch calls per tensor) timed in an offline W&B run, "
          "rows of 4 tensors each of {sizes} elements logged as wandb.watch logs a step, median of {repeats} "
          "rows per size, fit (weighted by relative error) of "
          "seconds = per_element × numel + per_tensor")


def default_path(environ: dict[str, str] | None = None) -> Path:
    """Where calibrations are kept: ``<HOURTAB_DATA_DIR>/watch-calibration.json`` (data dir ./instance)."""
    env = os.environ if environ is None else environ
    return Path(env.get("HOURTAB_DATA_DIR") or "instance") / FILE_NAME


def fit(samples: list[tuple[int, float]]) -> tuple[float, float]:
    """``(seconds per element, seconds per tensor)`` fitted to relative error, neither below zero.

    Weighting each sample by 1/seconds² keeps the small tensors (which carry the fixed cost) from
    being drowned by the large ones (which carry the per-element cost).
    """
    weights = [1.0 / (y * y) if y > 0 else 0.0 for _, y in samples]
    sw = sum(weights)
    mean_x = sum(w * x for w, (x, _) in zip(weights, samples, strict=True)) / sw
    mean_y = sum(w * y for w, (_, y) in zip(weights, samples, strict=True)) / sw
    var = sum(w * (x - mean_x) ** 2 for w, (x, _) in zip(weights, samples, strict=True))
    cov = sum(w * (x - mean_x) * (y - mean_y) for w, (x, y) in zip(weights, samples, strict=True))
    slope = max(cov / var if var else 0.0, 0.0)
    return slope, max(mean_y - slope * mean_x, 0.0)


def _time_call(history: Any, torch: Any, tensor: Any, name: str, to_host: bool) -> float:
    if tensor.is_cuda:
        torch.cuda.synchronize()
    started = time.perf_counter()
    history.log_tensor_stats(tensor.cpu() if to_host else tensor, name)
    if tensor.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - started


def _measure_device(run: Any, torch: Any, device: str, sizes: tuple[int, ...], repeats: int) -> dict[str, Any]:
    """Log rows the way wandb.watch does (many tensors under distinct keys, then one commit) and time
    every call; each size's median over ``repeats`` rows is one sample of the fit."""
    history = run._torch
    paths: dict[str, Any] = {}
    generator = torch.Generator().manual_seed(0)
    tensors = [torch.randn(size, generator=generator).to(device) for size in sizes]
    for kind, to_host in (("gradients", False), ("parameters", device != "cpu")):
        times: dict[int, list[float]] = {size: [] for size in sizes}
        for row in range(repeats + 1):
            for copy in range(COPIES):
                for size, tensor in zip(sizes, tensors, strict=True):
                    seconds = _time_call(history, torch, tensor, f"{kind}/layer{copy}.t{size}", to_host)
                    if row:  # the first row warms up allocations and kernels
                        times[size].append(seconds)
            run.log({}, commit=True)
        samples = [(size, statistics.median(times[size])) for size in sizes]
        per_element, per_tensor = fit(samples)
        paths[kind] = {"per_element_ns": per_element * 1e9, "per_tensor_us": per_tensor * 1e6,
                       "samples": [{"numel": n, "seconds": s} for n, s in samples]}
    return paths


def calibrate(device: str = "auto", repeats: int = 3, threads: int | None = None,
              sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Measure the CPU (and the GPU when present, or asked for) and return the calibration document."""
    torch, _ = require_torch()
    import wandb

    if device not in {"auto", "cpu", "cuda"}:
        raise InvalidReproArgument(f"--device must be auto, cpu or cuda, not {device!r}.")
    if device == "cuda" and not torch.cuda.is_available():
        raise InvalidReproArgument("--device cuda was asked for but torch sees no CUDA device here.")
    if repeats < 1:
        raise InvalidReproArgument(f"repeats must be at least 1, not {repeats}.")
    if threads is not None:
        torch.set_num_threads(threads)
    devices = ["cpu"] if device == "cpu" else ["cuda"] if device == "cuda" else \
        ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    with tempfile.TemporaryDirectory(prefix="hourtab-calibrate-") as scratch:
        run = wandb.init(project="hourtab-calibration", dir=scratch, mode="offline",
                         settings=wandb.Settings(silent=True, console="off", disable_git=True))
        try:
            measured = {d: _measure_device(run, torch, d, sizes, repeats) for d in devices}
        finally:
            run.finish()
    gpu = torch.cuda.get_device_name(0) if "cuda" in devices else None
    return {
        "schema": SCHEMA,
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "provenance": f"measured by `hourtab repro --calibrate` on {platform.node() or 'this machine'}",
        "machine": {"hostname": platform.node(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "gpu": gpu,
                    "torch": torch.__version__, "wandb": wandb.__version__, "python": platform.python_version()},
        "method": METHOD.format(sizes=", ".join(f"{s:,}" for s in sizes), repeats=repeats),
        "devices": measured,
    }


def save(calibration: dict[str, Any], path: Path) -> Path:
    """Write the calibration as JSON (creating the folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(calibration, indent=2) + "\n")
    return path


def calibrate_and_store(target: str | None, device: str = "auto", threads: int | None = None) -> tuple[Path, dict]:
    """``hourtab repro --calibrate [PATH]``: measure, then write to PATH or the data dir's file."""
    path = Path(target) if target else default_path()
    if path.is_dir():
        raise InvalidReproArgument(f"--calibrate {path.name} is a folder; give a file name (or none for the data dir).")
    calibration = calibrate(device=device, threads=threads)
    return save(calibration, path), calibration


def summary_lines(calibration: dict[str, Any]) -> list[str]:
    """One line per device and path: what a histogram costs here."""
    return [f"  {device:<5} {kind:<10} {path['per_element_ns']:.2f} ns per element + {path['per_tensor_us']:.0f} µs "
            "per tensor" for device, paths in calibration["devices"].items() for kind, path in paths.items()]
