"""The environment line ("wandb 0.31.0 • PyTorch 2.13.0 • Python 3.11 • H100 80 GB • 110M params").

Taken from the incident run's environment, falling back to the profile's hardware and versions when
the profile is of the same setup; facts that are absent are left out, never guessed. A GPU whose
name carries its memory ("A100 80GB PCIe") is not given it twice; an Apple GPU comes from the
``apple`` facts; a CPU run names its core count and torch threads when recorded.
"""

from __future__ import annotations

import re
from typing import Any

from incidents.diagnosis import setup, signals
from incidents.writeups.report.inputs import ReportInput

#: Config keys naming the torch thread count a CPU run used.
THREAD_KEYS = ("torch_threads", "num_threads", "torch_num_threads", "threads", "intra_op_threads")
_GB_IN_NAME = re.compile(r"\d+\s*[GT]B\b", re.IGNORECASE)


def _profile_fits(inputs: ReportInput, run: Any, stats: Any) -> bool:
    """The profile may lend its facts (hardware, size) only when it is of this run's setup."""
    profile = inputs.profile
    if profile is None:
        return False
    if run is None:
        return True
    signature = setup.profile_signature(profile.document, profile.name)
    return not setup.signature_mismatch(setup.run_signature(run, stats), signature, setup.run_watch(stats, "run"),
                                        setup.profile_watch(profile.document, None, ""))


def _params(inputs: ReportInput, run: Any, stats: Any, fits: bool) -> int | None:
    """The run's own count (watch histograms) first; the profile's only when it is of the same model."""
    own = signals.parameter_count(stats) if stats is not None else None
    if own is not None:
        return own
    model = (inputs.profile.document.get("model") or {}) if inputs.profile else {}
    return model["parameters"] if fits and isinstance(model.get("parameters"), int) else None


def _short(n: int) -> str:
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K" if n >= 1e3 else str(n)


def _threads(run: Any, hardware: dict[str, Any]) -> int | None:
    config = getattr(run, "config", {}) or {}
    for key in THREAD_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    value = hardware.get("torch_threads")
    return value if isinstance(value, int) and value > 0 else None


def _hardware(env: dict[str, Any], hardware: dict[str, Any], run: Any) -> str | None:
    gpu = env.get("gpu_name") or hardware.get("gpu_name")
    memory = env.get("gpu_memory_bytes") or hardware.get("gpu_memory_bytes")
    count = env.get("gpu_count") or hardware.get("gpu_count")
    if gpu:
        # "NVIDIA A100 80GB PCIe" already says its memory: say it once.
        size = f" {round(memory / 2**30)} GB" if memory and not _GB_IN_NAME.search(str(gpu)) else ""
        return f"{f'{count}× ' if count and count > 1 else ''}{gpu}{size}"
    if env.get("apple_gpu"):
        return str(env["apple_gpu"])
    cpu = env.get("cpu") or hardware.get("cpu_model")
    if not cpu:
        return None
    cores = env.get("cpu_count") or hardware.get("cpu_cores")
    threads = _threads(run, hardware)
    detail = [f"{cores} cores" if cores else "", f"torch {threads} thread{'s' if threads != 1 else ''}"
              if threads else ""]
    detail = [d for d in detail if d]
    return f"CPU {cpu}" + (f" ({', '.join(detail)})" if detail else "")


def environment_line(inputs: ReportInput) -> str:
    run = inputs.run("incident") or next((r.run for r in inputs.runs), None)
    env: dict[str, Any] = dict(getattr(run, "environment", {}) or {})
    stats = signals.histogram_stats(run.histograms) if run is not None else None
    fits = _profile_fits(inputs, run, stats)
    profile = inputs.profile.document if inputs.profile and fits else {}
    versions = profile.get("versions") or {}
    hardware = profile.get("hardware") or {}
    parts = []
    for key, label in (("wandb", "wandb"), ("torch", "PyTorch"), ("transformers", "transformers")):
        value = env.get(key) or versions.get(key)
        if value:
            parts.append(f"{label} {value}")
    python = env.get("python") or (profile.get("machine") or {}).get("python")
    if python:
        version = next((t for t in str(python).split() if t[:1].isdigit()), "")
        if version:
            parts.append(f"Python {'.'.join(version.split('.')[:2])}")
    device = _hardware(env, hardware, run)
    if device:
        parts.append(device)
    params = _params(inputs, run, stats, fits)
    if params:
        parts.append(f"{_short(params)} params")
    return " • ".join(parts)
