"""Profiler ingestion: where did a training step's time go, and how much of it was watch work?

Reads three kinds of evidence:

- ``hourtab-profile``: the reproducer's profile.json (figures it measured itself);
- ``key-averages-table``: the text of ``torch.profiler``'s ``key_averages().table()`` (``key_averages_table``);
- ``chrome-trace``: ``prof.export_chrome_trace()`` output, plain or gzip-compressed (``chrome_trace``).

*Watch work* is wandb's per-tensor histogram work. When the capture labels it (the reproducer wraps
``TorchHistory.log_tensor_stats`` in a ``wandb.watch.log_tensor_stats`` range) we use the labels;
otherwise we fall back to the ops that work issues (``aten::histc``, ``aten::isfinite``,
``aten::min``/``max``, ``aten::item``/``_local_scalar_dense``, ``aten::clone``, device-to-host
copies) and say so in ``warnings``, because a model may issue some of those ops itself.
In traces, overlapping ranges are merged before summing, so nested ops are never counted twice.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path
from typing import Any

from hourtab.core.values import TooDeep, json_loads
from incidents.errors import EvidenceNotFound
from incidents.evidence.chrome_trace import inspect_chrome_trace
from incidents.evidence.key_averages_table import TABLE_HEADER, inspect_key_averages_table
from incidents.evidence.profile_inspection import (
    InvalidProfile,
    ProfileInspection,
    by_phase,
    is_number,
)

MAX_BYTES = 512 * 2**20
PROFILE_SCHEMA = "hourtab.repro.profile"


def inspect_profile(path: str | Path) -> ProfileInspection:
    """Detect the kind of ``path`` and attribute its time; raise :class:`InvalidProfile` if unreadable."""
    path = Path(path)
    if not path.is_file():
        raise EvidenceNotFound(f"{path}: no such file.")
    data = _read_bytes(path)
    text = _decode(path, data)
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            document = json_loads(text)
        except json.JSONDecodeError as e:
            raise InvalidProfile(f"{path.name}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}).") from e
        except TooDeep as e:
            raise InvalidProfile(f"{path.name}: {e}; refused.") from e
        if isinstance(document, dict) and document.get("schema") == PROFILE_SCHEMA:
            return _inspect_hourtab_profile(path, document)
        if isinstance(document, dict) and "traceEvents" in document:
            return inspect_chrome_trace(document["traceEvents"], path.name)
        if isinstance(document, list):
            return inspect_chrome_trace(document, path.name)
        raise InvalidProfile(f"{path.name}: JSON, but neither an HourTab profile.json (schema {PROFILE_SCHEMA!r}) "
                             "nor a chrome trace (top-level 'traceEvents').")
    if TABLE_HEADER.search(text):
        return inspect_key_averages_table(text, path.name)
    raise InvalidProfile(f"{path.name}: not a profile we can read; expected an HourTab profile.json, a "
                         "torch.profiler key_averages().table() text dump, or a chrome trace (.json or .json.gz).")


def _read_bytes(path: Path) -> bytes:
    if path.stat().st_size > MAX_BYTES:
        raise InvalidProfile(f"{path.name}: larger than {MAX_BYTES // 2**20} MiB; capture fewer steps.")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(MAX_BYTES + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise InvalidProfile(f"{path.name}: a damaged gzip file ({e}).") from e
        if len(data) > MAX_BYTES:
            raise InvalidProfile(f"{path.name}: more than {MAX_BYTES // 2**20} MiB once decompressed.")
    return data


def _decode(path: Path, data: bytes) -> str:
    if b"\x00" in data[:4096]:
        raise InvalidProfile(f"{path.name}: a binary file, not a profile we can read.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidProfile(f"{path.name}: not UTF-8 text (byte {e.start}).") from e


# --- our own profile.json ----------------------------------------------------------------------------

def _inspect_hourtab_profile(path: Path, document: dict[str, Any]) -> ProfileInspection:
    """Figures the reproducer measured, for its profiled (heaviest) mode; top ops from its table."""
    version = document.get("schema_version")
    if version != 1:
        raise InvalidProfile(f"{path.name}: profile.json schema_version {version!r}; this HourTab reads version 1.")
    modes = document.get("modes")
    if not isinstance(modes, list) or not all(isinstance(m, dict) for m in modes):
        raise InvalidProfile(f"{path.name}: 'modes' must be a list of objects.")
    measured = [m for m in modes if is_number(m.get("mean_step_s")) and isinstance(m.get("step_times_s"), list)]
    if not measured:
        raise InvalidProfile(f"{path.name}: no mode has measured steps.")
    profiler = document.get("profiler") if isinstance(document.get("profiler"), dict) else None
    chosen = next((m for m in measured if profiler and m.get("mode") == profiler.get("mode")), None)
    chosen = chosen or max(measured, key=lambda m: m["mean_step_s"])
    try:
        steps = len(chosen["step_times_s"])
        total_ms = sum(float(s) for s in chosen["step_times_s"]) * 1000.0
        watch_ms = float(chosen.get("hook_s") or 0.0) * 1000.0
        given = chosen.get("phases_ms") or {}
        phases = by_phase(lambda p: float(given[p]) * steps if is_number(given.get(p)) else None)
    except (TypeError, ValueError) as e:
        raise InvalidProfile(f"{path.name}: mode {chosen.get('mode')!r} has malformed figures ({e}).") from e
    warnings = [f"profile.json holds {len(modes)} modes; these figures are for {chosen.get('mode')!r} "
                f"({'the profiled one' if profiler else 'the slowest'}). Others: " +
                ", ".join(f"{m.get('mode')} {m['mean_step_s'] * 1000:.1f} ms/step" for m in measured
                          if m is not chosen)] if len(measured) > 1 else []
    top: list[dict[str, Any]] = []
    table_name = profiler.get("table") if profiler else None
    table_path = (path.parent / table_name).resolve() if isinstance(table_name, str) else None
    if table_path and table_path.is_relative_to(path.parent.resolve()) and table_path.is_file():
        top = inspect_key_averages_table(table_path.read_text(encoding="utf-8"), table_path.name).top_ops
    else:
        warnings.append("The profiler table named in profile.json is not beside it: no top_ops.")
    return ProfileInspection("hourtab-profile", steps, total_ms, min(watch_ms, total_ms), top_ops=top,
                             warnings=warnings, mode=chosen.get("mode"), **phases)
