"""Find the run in a folder a consultant hands us, and read the files beside the ``.wandb`` log.

Accepted: a run folder (``run-*``, ``offline-run-*``), a ``wandb/`` folder (its ``latest-run``, or
its only run), or any folder holding exactly one of those (an unpacked archive). Runs made before
wandb 0.30 keep config, environment, summary, history and system metrics in JSON/YAML files
(``config.yaml``, ``wandb-metadata.json``, ``wandb-summary.json``, ``wandb-history.jsonl``,
``wandb-events.jsonl``); we read those when present, alone or to fill gaps the log leaves.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from hourtab.core.values import json_loads
from incidents.errors import InvalidEvidence
from incidents.evidence.wandb.api_exports import flat_row, frames_from_rows
from incidents.evidence.wandb.ending import run_ending
from incidents.evidence.wandb.evidence import RunEvidence, histogram_counts
from incidents.evidence.wandb.facts import apple_gpu
from incidents.evidence.wandb.nonfinite import from_rows
from incidents.evidence.wandb.records import NoReadableRecord, read_wandb_file
from incidents.evidence.wandb.run_fold import CONSOLE_TAIL

LEGACY_FILES = ("config.yaml", "wandb-metadata.json", "wandb-summary.json", "wandb-history.jsonl",
                "wandb-events.jsonl")
#: Packages whose versions we take from ``files/requirements.txt``.
VERSIONED_PACKAGES = ("torch", "transformers", "wandb")


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and (any(path.glob("run-*.wandb")) or any(_legacy(path, n) for n in LEGACY_FILES))


def find_run_folder(path: Path) -> Path:
    """The one run folder at or under ``path``; refuse ambiguity instead of guessing."""
    path = Path(path)
    if is_run_folder(path):
        return path
    latest = path / "latest-run"
    if latest.exists() and is_run_folder(latest.resolve()):
        return latest.resolve()
    for parent in (path, path / "wandb"):
        if not parent.is_dir():
            continue
        runs = sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink()
                      and p.name.startswith(("run-", "offline-run-")) and is_run_folder(p))
        if len(runs) == 1:
            return runs[0]
        if len(runs) > 1:
            names = ", ".join(p.name for p in runs[:5])
            raise InvalidEvidence(f"{path.name} holds {len(runs)} runs ({names}…); give one run folder")
    found = [p.parent for p in path.rglob("run-*.wandb")]
    found = sorted({p for p in found if not p.is_symlink()})
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise InvalidEvidence(f"{path.name} holds {len(found)} runs; give one run folder")
    raise InvalidEvidence(
        f"no W&B run found in {path.name}: expected a run folder (run-*/offline-run-*) with a "
        "run-<id>.wandb file or the legacy files " + ", ".join(LEGACY_FILES))


def read_run_folder(path: Path) -> RunEvidence:
    folder = find_run_folder(path)
    logs = sorted(folder.glob("run-*.wandb"))
    if len(logs) > 1:
        raise InvalidEvidence(f"{folder.name} holds {len(logs)} .wandb files; expected one")
    evidence = _read_log(logs[0], folder) if logs else RunEvidence(kind="run")
    return fill_from_folder(evidence, folder)


def fill_from_folder(evidence: RunEvidence, folder: Path) -> RunEvidence:
    """Complete what the log gave with the folder's legacy files and requirements, and name the run."""
    _fill_from_legacy(evidence, folder)
    _fill_from_requirements(evidence, folder)
    _fill_ending(evidence, folder)
    if not evidence.run_id:
        evidence.run_id = folder.name.rsplit("-", 1)[-1]
    if not evidence.name:
        evidence.name = evidence.run_id
    return evidence


def _read_log(log: Path, folder: Path) -> RunEvidence:
    """The folder's ``.wandb`` log; one with nothing readable is refused unless legacy files stand in."""
    try:
        return read_wandb_file(log)
    except NoReadableRecord as e:
        if not any(_legacy(folder, name) for name in LEGACY_FILES):
            raise
        return RunEvidence(kind="run", warnings=[str(e).removesuffix("; refused") + "; read the legacy files"])


def _legacy(folder: Path, name: str) -> Path | None:
    for candidate in (folder / "files" / name, folder / name):
        if candidate.is_file():
            return candidate
    return None


def _fill_from_legacy(evidence: RunEvidence, folder: Path) -> None:
    config = _legacy(folder, "config.yaml")
    if config:
        values, wandb_meta = _read_config_yaml(config, evidence.warnings)
        evidence.config = evidence.config or values
        # Runs of wandb 0.9–0.12 name the SDK version only here (and, before 0.10, nowhere else).
        version = wandb_meta.get("cli_version")
        if version and "wandb" not in evidence.environment:
            evidence.environment["wandb"] = str(version)
    meta = _legacy(folder, "wandb-metadata.json")
    if meta:
        _merge_metadata(evidence, _read_json(meta, evidence.warnings))
    summary = _legacy(folder, "wandb-summary.json")
    if summary and not evidence.summary:
        data = _read_json(summary, evidence.warnings)
        evidence.summary = {k: v for k, v in data.items() if not k.startswith("_wandb")
                            and not (isinstance(v, dict) and v.get("_type") == "histogram")}
    history = _legacy(folder, "wandb-history.jsonl")
    if history and evidence.history.empty:
        rows = list(_read_jsonl(history, evidence.warnings))
        if evidence.warnings and "is cut short" in evidence.warnings[-1]:
            evidence.ending = {**evidence.ending, "history_cut": True}
        evidence.nonfinite = from_rows(flat_row(r) for r in rows)
        hist, _, histos = frames_from_rows(rows, evidence.warnings, media=evidence.media)
        evidence.history, evidence.histograms = hist, histos
        evidence.histogram_counts = histogram_counts(histos) if len(histos) else {}
        if "_runtime" in hist and evidence.runtime_s is None and hist["_runtime"].notna().any():
            evidence.runtime_s = float(hist["_runtime"].max())
    events = _legacy(folder, "wandb-events.jsonl")
    if events and evidence.system.empty:
        rows = list(_read_jsonl(events, evidence.warnings))
        _, system, _ = frames_from_rows(rows, evidence.warnings, system=True)
        evidence.system = system


def _read_json(path: Path, warnings: list[str]) -> dict[str, Any]:
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        warnings.append(f"{path.name} is not valid JSON ({e}); ignored")
        return {}
    return data if isinstance(data, dict) else {}


def _read_jsonl(path: Path, warnings: list[str]) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json_loads(line)
            except ValueError:
                last = not line.endswith("\n")
                warnings.append(f"{path.name} line {number} " + ("is cut short: the file ends mid-line (copied while "
                                "being written, or truncated); the lines before it were read" if last else
                                "is not valid JSON; skipped"))
                continue
            if isinstance(row, dict):
                yield row


def _read_config_yaml(path: Path, warnings: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The user's config values, and W&B's own ``_wandb`` entry (``cli_version``, ``python_version``…)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        warnings.append(f"{path.name} is not valid YAML ({e}); ignored")
        return {}, {}
    out, meta = {}, {}
    for key, value in data.items() if isinstance(data, dict) else []:
        value = value.get("value") if isinstance(value, dict) and "value" in value else value
        if str(key) == "_wandb" and isinstance(value, dict):
            meta = value
        if str(key).startswith("_wandb") or key == "wandb_version":
            continue
        out[str(key)] = value
    return out, meta


def _merge_metadata(evidence: RunEvidence, meta: dict[str, Any]) -> None:
    gpus = meta.get("gpu_nvidia") or meta.get("gpu_devices") or []
    facts = {
        "python": meta.get("python"), "os": meta.get("os"), "host": meta.get("host"),
        "cpu": (meta.get("cpu") or {}).get("model") if isinstance(meta.get("cpu"), dict) else None,
        "cpu_count": meta.get("cpu_count"), "cpu_count_logical": meta.get("cpu_count_logical"),
        "gpu_name": (gpus[0].get("name") if gpus and isinstance(gpus[0], dict) else None)
        or (meta.get("gpu") if not str(meta.get("gpu") or "").startswith("Apple") else None),
        "gpu_count": meta.get("gpu_count") if not str(meta.get("gpu") or "").startswith("Apple") else None,
        "gpu_memory_bytes": _memory(gpus[0]) if gpus and isinstance(gpus[0], dict) else None,
        "cuda": meta.get("cuda_version") or meta.get("cuda"),
        "apple_gpu": apple_gpu(meta.get("apple") or {}),
        "program": meta.get("program"), "args": meta.get("args"), "executable": meta.get("executable"),
        "git_commit": (meta.get("git") or {}).get("commit"), "git_remote": (meta.get("git") or {}).get("remote"),
    }
    for key, value in facts.items():
        if value not in (None, "", [], {}) and key not in evidence.environment:
            evidence.environment[key] = value
    if meta.get("startedAt") and evidence.started_at is None:
        try:
            evidence.started_at = pd.Timestamp(meta["startedAt"]).tz_localize("UTC").to_pydatetime() \
                if pd.Timestamp(meta["startedAt"]).tzinfo is None else pd.Timestamp(meta["startedAt"]).to_pydatetime()
        except (ValueError, TypeError):
            evidence.warnings.append("wandb-metadata.json has an unreadable startedAt; ignored")
    if meta.get("state") and evidence.state == "unknown":
        evidence.state = str(meta["state"])
    # wandb 0.8–0.9 wrote the project, run name and SDK version into the metadata file.
    for attr, key in (("project", "project"), ("name", "name")):
        if isinstance(meta.get(key), str) and meta[key] and not getattr(evidence, attr):
            setattr(evidence, attr, meta[key])
    version = meta.get("cli_version") or meta.get("wandb_version")
    if isinstance(version, str) and version and "wandb" not in evidence.environment:
        evidence.environment["wandb"] = version
    if isinstance(meta.get("exitcode"), int) and not evidence.ending.get("exit_code"):
        evidence.ending = {**evidence.ending, "exit_code": meta["exitcode"]}


def _memory(gpu: dict[str, Any]) -> int | None:
    for key in ("memory_total", "memoryTotal"):
        if gpu.get(key) is not None:
            try:
                return int(gpu[key])
            except (TypeError, ValueError):
                return None
    return None


def _fill_ending(evidence: RunEvidence, folder: Path) -> None:
    """How the run ended, read again with the console's last lines when an ``output.log`` has them
    (``files/output.log``; wandb 0.8–0.9 wrote it beside its other files)."""
    log = next((p for p in (folder / "files" / "output.log", folder / "output.log") if p.is_file()), None)
    fill_ending_from_console(evidence, log, str(log.relative_to(folder)) if log is not None else "")


def fill_ending_from_console(evidence: RunEvidence, log: Path | None, shown: str) -> None:
    """Read the ending again with the last lines of ``log`` (a console capture such as ``output.log``)."""
    lines: list[str] = []
    if log is not None:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [line.rstrip("\n") for line in deque(f, maxlen=CONSOLE_TAIL) if line.strip()]
    ending = evidence.ending
    if (ending.get("how") and not lines) or (not ending and not lines):
        return
    source = str(ending.get("source") or "wandb-metadata.json exitcode").split(";")[0]
    read = run_ending(ending.get("exit_code"), lines, source, shown)
    # A log cut short (wandb 0.10-0.12 could flush a single line) must not hide the traceback the
    # .wandb file's own console records showed.
    if ending.get("exception") and not read.get("exception"):
        return
    evidence.ending = {**read, **({"history_cut": True} if ending.get("history_cut") else {})}


def _fill_from_requirements(evidence: RunEvidence, folder: Path) -> None:
    req = folder / "files" / "requirements.txt"
    if not req.is_file():
        return
    for line in req.read_text(encoding="utf-8", errors="replace").splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and name.lower() in VERSIONED_PACKAGES:
            evidence.environment.setdefault(name.lower(), version.strip())
