"""One entry point for every shape of W&B evidence: folder, ``.wandb`` file, archive, export file."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hourtab.core.values import TooDeep
from incidents.errors import InvalidEvidence
from incidents.evidence import archives
from incidents.evidence.wandb.api_exports import is_api_table, read_api_export, read_table
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.evidence.wandb.records import read_wandb_file
from incidents.evidence.wandb.runfolder import (
    _fill_from_requirements,
    fill_ending_from_console,
    read_run_folder,
)
from incidents.evidence.wandb.ui_csv import is_ui_table, read_csv_table, read_ui_csv, refuse

ACCEPTED = ("a run folder (run-*, offline-run-*, latest-run or wandb/), a run-<id>.wandb file, "
            "a .zip/.tar.gz of a run folder, or an export (.csv, .json, .jsonl, .parquet)")
EXPORT_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet")
#: Console captures an export may come with (the run's own file name, and what people save it as).
CONSOLE_NAMES = ("output.log", "console.log", "stdout.log", "train.log")


def load_runs(path: str | Path, *, max_archive_bytes: int = archives.DEFAULT_MAX_BYTES,
              max_members: int = archives.DEFAULT_MAX_MEMBERS, display_name: str | None = None) -> list[RunEvidence]:
    """Every run the input holds (a UI chart export may hold several; everything else one).

    ``display_name`` is what messages call the file (an upload's own name): the server-side path
    it was saved under, and the folders archives are unpacked into, never appear in a message.
    """
    path = Path(path)
    shown = Path(display_name).name if display_name else None
    try:
        runs = _load_runs(path, max_archive_bytes=max_archive_bytes, max_members=max_members)
    except (TooDeep, RecursionError) as e:
        detail = str(e) if isinstance(e, TooDeep) else "JSON nested too deeply"
        raise InvalidEvidence(f"{shown or path.name}: {detail}; refused") from e
    except InvalidEvidence as e:
        raise type(e)(own_names(str(e), path, shown)) from e
    for run in runs:
        run.strip_forbidden_text()
        run.warnings = [own_names(w, path, shown) for w in run.warnings]
    return runs


_UNPACKED = re.compile(re.escape(tempfile.gettempdir().rstrip("/")) + r"/hourtab-[\w.-]+/(?:x/)?")


def own_names(message: str, path: Path, shown: str | None) -> str:
    """``message`` naming files as their owner knows them, with no server-side folders."""
    if shown:
        message = message.replace(str(path), shown).replace(path.name, shown)
    return _UNPACKED.sub("", message)


def _load_runs(path: Path, *, max_archive_bytes: int, max_members: int) -> list[RunEvidence]:
    if not path.exists():
        raise InvalidEvidence(f"{path} does not exist")
    if path.is_dir():
        return [read_run_folder(path)]
    name = path.name.lower()
    if name.endswith(".wandb"):
        evidence = read_wandb_file(path)
        _fill_from_requirements(evidence, path.parent)
        return [evidence]
    if archives.is_archive(path):
        with tempfile.TemporaryDirectory(prefix="hourtab-archive-") as tmp:
            archives.extract(path, Path(tmp) / "x", max_members=max_members, max_bytes=max_archive_bytes)
            root = Path(tmp) / "x"
            exports = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in EXPORT_SUFFIXES
                       and not p.name.startswith(("wandb-", "requirements"))]
            if not any(root.rglob("run-*.wandb")) and len(exports) == 1 and not _has_legacy(root):
                runs = _load_runs(exports[0], max_archive_bytes=max_archive_bytes, max_members=max_members)
                _console_beside(runs, root)
                return runs
            return [read_run_folder(root)]
    if name.endswith(".csv"):
        table = read_csv_table(path)
        columns = [str(c) for c in table.columns]
        if is_api_table(columns):
            return [read_api_export(path, table.replace("", None))]
        if is_ui_table(columns):
            return read_ui_csv(path, table)
        raise refuse(path, columns)
    if name.endswith((".json", ".jsonl", ".parquet")):
        return [read_api_export(path, read_table(path))]
    raise InvalidEvidence(f"{path.name}: not a W&B input HourTab reads; give {ACCEPTED}")


def load_run(path: str | Path, *, max_archive_bytes: int = archives.DEFAULT_MAX_BYTES,
             max_members: int = archives.DEFAULT_MAX_MEMBERS) -> RunEvidence:
    """The run in ``path``; for a chart export with several runs, the first, with a warning."""
    runs = load_runs(path, max_archive_bytes=max_archive_bytes, max_members=max_members)
    first = runs[0]
    if len(runs) > 1:
        names = ", ".join(repr(r.name) for r in runs)
        first.warnings.append(f"this export holds {len(runs)} runs ({names}); this is {first.name!r}")
    return first


def _console_beside(runs: list[RunEvidence], root: Path) -> None:
    """An export packed with the run's console capture (``output.log``): how the run ended."""
    logs = [p for p in root.rglob("*.log") if p.is_file() and p.name in CONSOLE_NAMES]
    if len(logs) == 1 and len(runs) == 1:
        fill_ending_from_console(runs[0], logs[0], logs[0].name)


def _has_legacy(root: Path) -> bool:
    return any(root.rglob("wandb-history.jsonl")) or any(root.rglob("wandb-metadata.json"))
