"""Trim a W&B run folder to what HourTab's rules read, for a small test corpus of real runs.

A public run folder is mostly bytes no rule reads: summary records for every logged step, every
console line, per-disk and network samples, code diffs, media files, and thousands of rows of a
dense training loss whose every value is not needed to judge its trend. Trimming keeps the
records the rules and charts read; ``tests/incidents/evidence/wandb/test_trim.py`` checks that a
trimmed run gets the verdicts of the original.

History rows (``.wandb`` history records, ``wandb-history.jsonl`` lines) — kept whole (every key of
a kept row): the first and last :data:`EDGE_ROWS` rows; every row that logs a non-finite value;
every row that logs a key present in fewer than half of the rows (evaluation rows, epoch metrics,
histograms); and enough evenly spaced rows of the rest to make :attr:`TrimLimits.rows` in all. With
:attr:`TrimLimits.histogram_steps`, histograms are kept at that many evenly spaced logged steps (first
and last included) and dropped from the other rows, for runs that log hundreds of them.

Other records of a ``.wandb`` log: ``run``, ``environment``, ``config``, ``telemetry`` and ``exit``
as they are; one summary record with each key's final value (typed values such as histograms
left out); the console's last :attr:`TrimLimits.console_lines` lines, each cut to
:attr:`TrimLimits.line_chars` characters; at most :attr:`TrimLimits.stats` evenly spaced ``stats``
records, with the keys of :data:`STATS_KEYS` (per-core CPU only up to :attr:`TrimLimits.cores` cores). File uploads, requests, metric definitions and
artifacts are dropped. Files of wandb 0.8–0.12 get the same treatment (``wandb-events.jsonl`` as the
stats records, ``output.log`` as the console); ``wandb-metadata.json`` loses the personal fields
of :data:`PERSONAL`; ``requirements.txt`` keeps the versions HourTab reads; ``media/``, ``logs/``,
``diff.patch`` and environment dumps are not copied.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wandb.proto.wandb_internal_pb2 import HistoryItem, Record

from incidents.evidence.wandb.framing import iter_records, write_records
from incidents.evidence.wandb.run_fold import CONSOLE_TAIL

#: Console records (``output`` before wandb 0.13).
CONSOLE_KINDS = frozenset({"output_raw", "output"})
#: Record kinds copied as they are; ``history``, ``summary``, ``stats`` and the console are
#: trimmed, every other kind is dropped.
KEPT_KINDS = frozenset({"header", "run", "environment", "config", "telemetry", "exit", "final", "footer"})
#: System-metric keys the rules and charts read (as a ``.wandb`` file names them; legacy files
#: prefix them with ``system.``).
STATS_KEYS = re.compile(r"(gpu\.(process\.)?\d+\.(gpu|memory|memoryAllocated|memoryAllocatedBytes)"
                        r"|cpu|cpu\.\d+\.cpu_percent|memory|memory_percent|proc\.memory\.rssMB)")
PER_CORE = re.compile(r"cpu\.\d+\.cpu_percent")
#: Rows kept at each end of a history: a loss's first fall and its last stretch decide its verdicts.
EDGE_ROWS = 50
#: Fields of ``wandb-metadata.json`` that say who ran the run and where their files are, not how.
PERSONAL = ("email", "username", "root", "codePath", "codePathLocal")
VERSIONED = re.compile(r"^(torch|transformers|wandb|pytorch-lightning|lightning)==", re.IGNORECASE)
NON_FINITE = frozenset({"NaN", "Infinity", "-Infinity", "nan", "inf", "-inf"})
HISTOGRAM_PARTS = frozenset({"_type", "bins", "values", "packedBins"})


@dataclass(frozen=True)
class TrimLimits:
    """How far to trim (the defaults keep a run to a few tens of KB)."""

    rows: int = 600
    stats: int = 60
    #: Per-core CPU figures are kept on hosts with at most this many cores (they are most of a
    #: sample's bytes on a large host; the overall ``cpu`` figure is always kept).
    cores: int = 32
    console_lines: int = CONSOLE_TAIL
    line_chars: int = 500
    histogram_steps: int | None = None


@dataclass
class Trimmed:
    """What a trim kept and dropped."""

    bytes_in: int = 0
    bytes_out: int = 0
    rows_in: int = 0
    rows_out: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def add(self, other: Trimmed) -> None:
        for name in ("bytes_in", "bytes_out", "rows_in", "rows_out"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, n in other.dropped.items():
            self.dropped[kind] = self.dropped.get(kind, 0) + n


@dataclass(frozen=True)
class Row:
    """What row selection needs to know of one history row."""

    keys: frozenset[str]
    non_finite: bool
    histograms: frozenset[str]
    step: int


def trim_run_folder(src: Path, dst: Path, limits: TrimLimits = TrimLimits()) -> Trimmed:
    """Write the trimmed copy of the run folder ``src`` to ``dst`` (created)."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    result = Trimmed()
    for log in sorted(src.glob("run-*.wandb")):
        result.add(trim_wandb_file(log, dst / log.name, limits))
    for folder in (src, src / "files"):
        if folder.is_dir():
            _trim_files(folder, dst / folder.relative_to(src), limits, result)
    return result


# -- row selection, shared by .wandb logs and jsonl files ------------------------------------------

def select_rows(rows: list[Row], limits: TrimLimits) -> tuple[set[int], set[int]]:
    """(rows to keep, rows whose histograms to keep), by the rules of the module docstring."""
    n = len(rows)
    counts: dict[str, int] = {}
    for row in rows:
        for key in row.keys:
            counts[key] = counts.get(key, 0) + 1
    sparse = {k for k, c in counts.items() if c < n / 2}
    keep = set(range(min(EDGE_ROWS, n))) | set(range(max(0, n - EDGE_ROWS), n))
    keep |= {i for i, row in enumerate(rows) if row.non_finite or (row.keys & sparse)}
    # Every other key keeps up to ``limits.rows`` of its rows, evenly spaced over the run.
    for key in sorted(set(counts) - sparse):
        having = [i for i, row in enumerate(rows) if key in row.keys]
        need = min(len(having), limits.rows) - sum(1 for i in having if i in keep)
        rest = [i for i in having if i not in keep]
        if need > 0 and rest:
            stride = max(1, math.ceil(len(rest) / need))
            keep |= set(rest[::stride])
    with_histograms = [i for i in range(n) if rows[i].histograms]
    if limits.histogram_steps is None or len(with_histograms) <= limits.histogram_steps:
        return keep | set(with_histograms), set(with_histograms)
    picks = {with_histograms[round(j * (len(with_histograms) - 1) / (limits.histogram_steps - 1))]
             for j in range(limits.histogram_steps)}
    return keep | picks, picks


def _evenly(indices: list[int], most: int) -> set[int]:
    if len(indices) <= most:
        return set(indices)
    return {indices[round(j * (len(indices) - 1) / (most - 1))] for j in range(most)}


# -- .wandb logs ------------------------------------------------------------------------------------

def trim_wandb_file(src: Path, dst: Path, limits: TrimLimits = TrimLimits()) -> Trimmed:
    """Write the records of ``src`` that HourTab reads to ``dst``, in the SDK's framing."""
    records = [Record.FromString(payload) for _, payload in iter_records(src, [])]
    kinds = [r.WhichOneof("record_type") for r in records]
    history = [i for i, k in enumerate(kinds) if k == "history"]
    rows, histograms = select_rows([_history_row(records[i]) for i in history], limits)
    kept_history = {history[j]: j in histograms for j in rows}
    stats = _evenly([i for i, k in enumerate(kinds) if k == "stats"], limits.stats)
    console = _console_records(records, kinds, limits.console_lines)
    last_summary = max((i for i, k in enumerate(kinds) if k == "summary"), default=None)
    result = Trimmed(bytes_in=src.stat().st_size, rows_in=len(history), rows_out=len(kept_history))
    kept: list[bytes] = []
    for i, (record, kind) in enumerate(zip(records, kinds, strict=True)):
        out = _kept(record, kind, i, kept_history, stats, console, last_summary, records, limits)
        if out is None:
            result.dropped[kind or "unknown"] = result.dropped.get(kind or "unknown", 0) + 1
        else:
            kept.append(out.SerializeToString())
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "wb") as f:
        result.bytes_out = write_records(f, iter(kept))
    return result


def _kept(record: Record, kind: str | None, i: int, history: dict[int, bool], stats: set[int], console: set[int],
          last_summary: int | None, records: list[Record], limits: TrimLimits) -> Record | None:
    if kind in KEPT_KINDS:
        return record
    if kind == "history" and i in history:
        return record if history[i] else _without_histograms(record)
    if kind == "stats" and i in stats:
        return _stats(record, limits)
    if kind == "summary" and i == last_summary:
        return _final_summary(records)
    if kind in CONSOLE_KINDS and i in console:
        out = Record()
        out.CopyFrom(record)
        part = getattr(out, kind)
        part.line = "\n".join(line[:limits.line_chars] for line in part.line.split("\n"))
        return out
    return None


def _item_key(item: HistoryItem) -> str:
    return "/".join(item.nested_key) if item.nested_key else item.key


def _is_histogram_item(item: HistoryItem) -> bool:
    nested = item.nested_key
    if len(nested) > 1 and nested[-1] in HISTOGRAM_PARTS:
        return True
    return item.value_json.startswith("{") and '"_type": "histogram"' in item.value_json[:40]


def _history_row(record: Record) -> Row:
    keys, histograms, non_finite = set(), set(), False
    for item in record.history.item:
        key = _item_key(item)
        if _is_histogram_item(item):
            histograms.add(key.rsplit("/", 1)[0] if item.nested_key else key)
        elif key not in ("_step", "_runtime", "_timestamp"):
            keys.add(key)
            non_finite = non_finite or item.value_json in NON_FINITE
    return Row(frozenset(keys | histograms), non_finite, frozenset(histograms), record.history.step.num)


def _without_histograms(record: Record) -> Record:
    out = Record()
    out.CopyFrom(record)
    del out.history.item[:]
    for item in record.history.item:
        if not _is_histogram_item(item):
            out.history.item.add().CopyFrom(item)
    return out


def _console_records(records: list[Record], kinds: list[str | None], lines: int) -> set[int]:
    """Indices of the ``output_raw`` records holding the console's last ``lines`` lines."""
    keep, seen = set(), 0
    for i in range(len(records) - 1, -1, -1):
        kind = kinds[i]
        if kind is None or kind not in CONSOLE_KINDS:
            continue
        keep.add(i)
        seen += getattr(records[i], kind).line.count("\n") or 1
        if seen >= lines:
            break
    return keep


def _final_summary(records: list[Record]) -> Record:
    """One summary record with each key's last value (updates and removals applied in order)."""
    final: dict[tuple[str, ...], Any] = {}   # the summary items, protobuf messages
    for record in records:
        if record.WhichOneof("record_type") != "summary":
            continue
        for item in record.summary.update:
            final[tuple(item.nested_key) or (item.key,)] = item
        for item in record.summary.remove:
            final.pop(tuple(item.nested_key) or (item.key,), None)
    out = Record()
    for item in final.values():
        if '"_type"' not in item.value_json[:40] and not (item.nested_key and item.nested_key[-1] in HISTOGRAM_PARTS):
            out.summary.update.add().CopyFrom(item)
    return out


def _stats(record: Record, limits: TrimLimits) -> Record:
    out = Record()
    out.CopyFrom(record)
    del out.stats.item[:]
    keys = [item.key for item in record.stats.item]
    many = sum(1 for k in keys if PER_CORE.fullmatch(k)) > limits.cores
    for item in record.stats.item:
        if STATS_KEYS.fullmatch(item.key) and not (many and PER_CORE.fullmatch(item.key)):
            out.stats.item.add().CopyFrom(item)
    return out


# -- files of wandb 0.8–0.12 ------------------------------------------------------------------------

def _trim_files(src: Path, dst: Path, limits: TrimLimits, result: Trimmed) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    if (src / "config.yaml").is_file():
        _write(dst / "config.yaml", (src / "config.yaml").read_bytes(), result, src / "config.yaml")
    if (src / "wandb-history.jsonl").is_file():
        _trim_history_jsonl(src / "wandb-history.jsonl", dst / "wandb-history.jsonl", limits, result)
    if (src / "wandb-events.jsonl").is_file():
        lines = [_system_row(x, limits) for x in _lines(src / "wandb-events.jsonl")]
        lines = [x for x in lines if x]
        chosen = _evenly(list(range(len(lines))), limits.stats)
        _write(dst / "wandb-events.jsonl", "".join(lines[i] + "\n" for i in sorted(chosen)).encode(), result,
               src / "wandb-events.jsonl")
    if (src / "output.log").is_file():
        with open(src / "output.log", encoding="utf-8", errors="replace") as f:
            tail = [line.rstrip("\n")[:limits.line_chars] + "\n" for line in deque(f, maxlen=limits.console_lines)]
        _write(dst / "output.log", "".join(tail).encode(), result, src / "output.log")
    _trim_json_files(src, dst, result)


def _trim_json_files(src: Path, dst: Path, result: Trimmed) -> None:
    meta = src / "wandb-metadata.json"
    if meta.is_file():
        data = json.loads(meta.read_text(encoding="utf-8"))
        kept = {k: v for k, v in data.items() if k not in PERSONAL} if isinstance(data, dict) else data
        _write(dst / meta.name, json.dumps(kept, indent=1).encode(), result, meta)
    summary = src / "wandb-summary.json"
    if summary.is_file():
        data = json.loads(summary.read_text(encoding="utf-8") or "{}")
        kept = {k: v for k, v in data.items() if not (isinstance(v, dict) and "_type" in v)} \
            if isinstance(data, dict) else data
        _write(dst / summary.name, json.dumps(kept).encode(), result, summary)
    requirements = src / "requirements.txt"
    if requirements.is_file():
        lines = [x.strip() for x in _lines(requirements) if VERSIONED.match(x.strip())]
        _write(dst / requirements.name, "".join(x + "\n" for x in lines).encode(), result, requirements)


def _trim_history_jsonl(src: Path, dst: Path, limits: TrimLimits, result: Trimmed) -> None:
    lines = [x for x in _lines(src) if x.strip()]
    parsed = [_json_row(x) for x in lines]
    rows, histograms = select_rows([_jsonl_row(r) for r in parsed], limits)
    out = []
    for i in sorted(rows):
        row = parsed[i]
        if i not in histograms and row is not None:
            row = {k: v for k, v in row.items() if not _json_histogram(v)}
            out.append(json.dumps(row))
        else:
            out.append(lines[i])
    result.rows_in += len(lines)
    result.rows_out += len(out)
    _write(dst, "".join(x + "\n" for x in out).encode(), result, src)


def _json_row(line: str) -> dict | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def _json_histogram(value: object) -> bool:
    return isinstance(value, dict) and value.get("_type") == "histogram"


def _jsonl_row(row: dict | None) -> Row:
    if row is None:
        return Row(frozenset(), False, frozenset(), -1)
    histograms = frozenset(k for k, v in row.items() if _json_histogram(v))
    keys = frozenset(k for k in row if k not in ("_step", "_runtime", "_timestamp"))
    non_finite = any(isinstance(v, float) and not math.isfinite(v) for v in row.values())
    step = row.get("_step")
    return Row(keys, non_finite, histograms, step if isinstance(step, int) else -1)


def _system_row(line: str, limits: TrimLimits) -> str:
    row = _json_row(line) if line.strip() else None
    if row is None:
        return ""
    many = sum(1 for k in row if PER_CORE.fullmatch(k.removeprefix("system."))) > limits.cores
    return json.dumps({k: v for k, v in row.items() if not k.startswith("system.") or (
        STATS_KEYS.fullmatch(k[len("system."):]) and not (many and PER_CORE.fullmatch(k[len("system."):])))})


def _lines(path: Path) -> Iterable[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _write(path: Path, data: bytes, result: Trimmed, source: Path) -> None:
    path.write_bytes(data)
    result.bytes_in += source.stat().st_size
    result.bytes_out += len(data)
