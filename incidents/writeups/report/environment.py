"""The environment line ("wandb 0.31.0 • PyTorch 2.13.0 • Python 3.11 • H100 80 GB • 110M params").

Taken from the incident run's environment, falling back to the profile's hardware and versions;
facts that are absent are left out, never guessed.
"""

from __future__ import annotations

from typing import Any

from incidents.diagnosis import setup, signals
from incidents.writeups.report.inputs import ReportInput


def _params(inputs: ReportInput, run: Any) -> int | None:
    """The run's own count (watch histograms) first; the profile's only when it is of the same model."""
    stats = signals.histogram_stats(run.histograms) if run is not None else None
    own = signals.parameter_count(stats) if stats is not None else None
    if own is not None:
        return own
    profile = inputs.profile
    model = (profile.document.get("model") or {}) if profile else {}
    if not isinstance(model.get("parameters"), int):
        return None
    if run is not None:
        signature = setup.profile_signature(profile.document, profile.name)
        if setup.signature_mismatch(setup.run_signature(run, stats), signature,
                                    setup.run_watch(stats, "run"), setup.profile_watch(profile.document, None, "")):
            return None
    return model["parameters"]


def _short(n: int) -> str:
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K" if n >= 1e3 else str(n)


def environment_line(inputs: ReportInput) -> str:
    run = inputs.run("incident") or next((r.run for r in inputs.runs), None)
    env: dict[str, Any] = dict(getattr(run, "environment", {}) or {})
    profile = inputs.profile.document if inputs.profile else {}
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
    gpu = env.get("gpu_name") or hardware.get("gpu_name")
    memory = env.get("gpu_memory_bytes") or hardware.get("gpu_memory_bytes")
    count = env.get("gpu_count") or hardware.get("gpu_count")
    if gpu:
        size = f" {round(memory / 2**30)} GB" if memory else ""
        parts.append(f"{f'{count}× ' if count and count > 1 else ''}{gpu}{size}")
    else:
        cpu = env.get("cpu") or hardware.get("cpu_model")
        if cpu:
            parts.append(f"CPU {cpu}")
    params = _params(inputs, run)
    if params:
        parts.append(f"{_short(params)} params")
    return " • ".join(parts)
