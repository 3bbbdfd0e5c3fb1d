"""Run facts folded from a ``.wandb`` file's records: config and summary values, and the environment.

Kept apart from the record fold (``records.py``) so that one reads as the hot path it is.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd

from hourtab.core.values import json_loads

_HISTOGRAM_TYPE = '"histogram"'


def utc_datetime(value: Any) -> dt.datetime | None:
    """A W&B time stamp (ISO text, or seconds) as an aware UTC datetime; None when absent or unreadable."""
    if not value:
        return None
    try:
        return pd.Timestamp(value).tz_convert("UTC").to_pydatetime()
    except (ValueError, TypeError):
        return None


def _loads(value_json: str) -> Any:
    try:
        return json_loads(value_json)
    except ValueError:
        return value_json


def nested_values(items: dict[tuple[str, ...], str], drop_prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, vj in items.items():
        if key and key[0] == drop_prefix:
            continue
        out[".".join(key)] = _loads(vj)
    return out


def summary_values(items: dict[tuple[str, ...], str]) -> dict[str, Any]:
    """The run's summary as ``{"a.b": value}``, leaving out histograms: a histogram is stored as its
    parts (``[*key, "_type"]``, ``bins``, ``values``) at any depth (``Gradients/fc`` is ``["Gradients",
    "fc", …]``), or as one JSON object; neither is a summary figure."""
    histos = {k[:-1] for k, v in items.items() if len(k) > 1 and k[-1] == "_type" and v == _HISTOGRAM_TYPE}
    out: dict[str, Any] = {}
    for key, vj in sorted(items.items()):
        if key[0].startswith("_wandb") or any(key[:i] in histos for i in range(1, len(key))):
            continue
        value = _loads(vj)
        if isinstance(value, dict) and value.get("_type") == "histogram":
            continue
        out[".".join(key)] = value
    return out


def environment(env: dict[str, Any], telemetry: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    gpus = env.get("gpu_nvidia") or []
    candidates = {
        "python": env.get("python") or telemetry.get("python_version"),
        "os": env.get("os"),
        "host": env.get("host") or run.get("host"),
        "cpu": (env.get("cpu") or {}).get("model"),
        "cpu_count": env.get("cpu_count"),
        "cpu_count_logical": env.get("cpu_count_logical"),
        "memory_bytes": _int((env.get("memory") or {}).get("total")),
        "gpu_name": (gpus[0].get("name") if gpus else None) or env.get("gpu_type"),
        "gpu_count": env.get("gpu_count") or (len(gpus) or None),
        "gpu_memory_bytes": _int(gpus[0].get("memory_total")) if gpus else None,
        "cuda": env.get("cuda_version"),
        "apple_gpu": apple_gpu(env.get("apple") or {}),
        "wandb": telemetry.get("cli_version"),
        "huggingface": telemetry.get("huggingface_version"),
        "program": env.get("program"),
        "args": env.get("args"),
        "executable": env.get("executable"),
        "git_commit": (env.get("git") or {}).get("commit") or run.get("git_commit"),
        "git_remote": (env.get("git") or {}).get("remote_url") or run.get("git_remote"),
    }
    for key, value in candidates.items():
        if value not in (None, "", [], {}):
            out[key] = value
    return out


def apple_gpu(apple: dict[str, Any]) -> str | None:
    """"Apple M1 Pro, 16-core GPU" from the SDK's ``apple`` facts (``gpu_cores``, or ``gpuCores`` in
    older metadata files); None off Apple silicon."""
    if not isinstance(apple, dict) or not apple.get("name"):
        return None
    cores = apple.get("gpu_cores") or apple.get("gpuCores")
    return f"{apple['name']}, {cores}-core GPU" if cores else f"{apple['name']} GPU"


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
