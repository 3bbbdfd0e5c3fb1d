"""Changes to a real run that must not turn a right verdict into a wrong one (metamorphic relations).

Each transform rewrites one extracted corpus run folder in place, the way the SDK itself would have
written the changed run: records go through the SDK's protobufs and framing, legacy files stay JSON
lines.

* ``eval_row`` — one more history row holding only an evaluation key (no training loss);
* ``idle_gpu`` — one more GPU on the node, idle, at the node's idle memory level;
* ``foreign_gpu`` — one more GPU on the node, busy with another job (runs whose GPUs the SDK names);
* ``truncate`` — the run's data file cut at a random byte (seeded by the run's name);
* ``renamed`` — keys written the way another SDK version writes them: a flat ``key`` as a
  ``nested_key`` and back, histograms as one JSON item (wandb ≤ 0.13) and as nested parts (newer),
  and in a legacy JSON-lines history, histogram edges as the server's ``packedBins``.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Callable
from pathlib import Path

from wandb.proto.wandb_internal_pb2 import Record

from incidents.evidence.wandb.framing import iter_records, write_records

IDLE_MEMORY_CEILING = 1.0


def _log(folder: Path) -> Path | None:
    return next(iter(sorted(folder.glob("run-*.wandb"))), None)


def _legacy(folder: Path, name: str) -> Path | None:
    return next((p for p in (folder / name, folder / "files" / name) if p.is_file()), None)


def _records(path: Path) -> list[Record]:
    return [Record.FromString(p) for _, p in iter_records(path, [])]


def _write(path: Path, records: list[Record]) -> None:
    with open(path, "wb") as f:
        write_records(f, (r.SerializeToString() for r in records))


# -- an evaluation-only row -------------------------------------------------------------------------

EVAL_KEY = "eval/samples_per_second"


def eval_row(folder: Path) -> bool:
    log = _log(folder)
    if log is not None:
        records = _records(log)
        history = [r for r in records if r.WhichOneof("record_type") == "history"]
        if not history:
            return False
        last = history[-1].history
        row = Record()
        row.history.step.num = last.step.num + 1
        for item in last.item:
            if (item.key or "".join(item.nested_key)) in ("_runtime", "_timestamp"):
                row.history.item.add().CopyFrom(item)
        extra = row.history.item.add()
        extra.nested_key.append(EVAL_KEY)
        extra.value_json = "42.0"
        at = max(i for i, r in enumerate(records) if r.WhichOneof("record_type") == "history") + 1
        _write(log, records[:at] + [row] + records[at:])
        return True
    path = _legacy(folder, "wandb-history.jsonl")
    if path is None:
        return False
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    last = rows[-1]
    rows.append({EVAL_KEY: 42.0, "_step": int(last.get("_step", len(rows) - 1)) + 1,
                 **{k: last[k] for k in ("_runtime", "_timestamp") if k in last}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return True


# -- one more GPU on the node -------------------------------------------------------------------------

_GPU = re.compile(r"(?:system\.)?gpu\.(?:process\.)?(\d+)\.(gpu|memoryAllocated)")


def idle_gpu(folder: Path) -> bool:
    return _add_gpu(folder, busy=False)


def foreign_gpu(folder: Path) -> bool:
    return _add_gpu(folder, busy=True)


def _add_gpu(folder: Path, busy: bool) -> bool:
    """A GPU after the node's last: idle at the node's least memory level (at most 1 %), or busy at
    100 % with 90 % memory. A foreign GPU is only added beside GPUs the SDK names as the run's."""
    log = _log(folder)
    if log is not None:
        records = _records(log)
        samples = [r for r in records if r.WhichOneof("record_type") == "stats"]
        keys = [[i.key for i in r.stats.item] for r in samples]
        values = [{i.key: i.value_json for i in r.stats.item} for r in samples]
    else:
        path = _legacy(folder, "wandb-events.jsonl")
        if path is None:
            return False
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        keys = [list(r) for r in rows]
        values = [{k: json.dumps(v) for k, v in r.items()} for r in rows]
    found = {int(m.group(1)) for ks in keys for k in ks if (m := _GPU.fullmatch(k))}
    process = any(".process." in k for ks in keys for k in ks)
    if not found or (busy and not process):
        return False
    new = max(found) + 1
    util, mem = (100.0, 90.0) if busy else (0.0, _idle_level(values, found))
    if log is not None:
        for r in samples:
            for key, value in ((f"gpu.{new}.gpu", util), (f"gpu.{new}.memoryAllocated", mem)):
                item = r.stats.item.add()
                item.key, item.value_json = key, json.dumps(value)
        _write(log, records)
    else:
        for r in rows:
            if any(_GPU.fullmatch(k) for k in r):
                r[f"system.gpu.{new}.gpu"], r[f"system.gpu.{new}.memoryAllocated"] = util, mem
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return True


def _idle_level(values: list[dict[str, str]], found: set[int]) -> float:
    """The memory an idle GPU shows on this node: that of its idle GPUs (at most 5 % busy; medians over
    the samples), else 1 % (or less, when a GPU of the node shows less)."""
    def median(i: int, what: str) -> float | None:
        got = sorted(float(v) for vs in values for k, v in vs.items()
                     if re.fullmatch(rf"(?:system\.)?gpu\.{i}\.{what}", k) and v not in ("null", "NaN"))
        return got[len(got) // 2] if got else None

    gpus = {i: (median(i, "gpu"), median(i, "memoryAllocated")) for i in found}
    idle = [m for u, m in gpus.values() if u is not None and u <= 5.0 and m is not None]
    if idle:
        return min(idle)
    return min([m for _, m in gpus.values() if m is not None] + [IDLE_MEMORY_CEILING])


# -- a file cut short ---------------------------------------------------------------------------------

def truncate(folder: Path) -> bool:
    path = _log(folder) or _legacy(folder, "wandb-history.jsonl")
    if path is None:
        return False
    data = path.read_bytes()
    at = random.Random(zlib.crc32(folder.name.encode())).randrange(1, len(data))
    path.write_bytes(data[:at])
    return True


# -- keys as another SDK version writes them ------------------------------------------------------------

def renamed(folder: Path) -> bool:
    log = _log(folder)
    if log is not None:
        records = _records(log)
        for record in records:
            if record.WhichOneof("record_type") == "history":
                _flip_history(record)
        _write(log, records)
        return True
    path = _legacy(folder, "wandb-history.jsonl")
    if path is None or '"histogram"' not in path.read_text():
        return False
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps({k: _packed(v) for k, v in r.items()}) + "\n" for r in rows))
    return True


def _packed(value: object) -> object:
    if isinstance(value, dict) and value.get("_type") == "histogram" and "bins" in value and len(value["bins"]) > 1:
        bins = value["bins"]
        size = (bins[-1] - bins[0]) / (len(bins) - 1)
        return {"_type": "histogram", "values": value["values"],
                "packedBins": {"min": bins[0], "size": size, "count": len(bins) - 1}}
    return value


def _flip_history(record: Record) -> None:
    """Scalars: ``key`` ↔ ``nested_key``; histograms: one JSON item ↔ ``[name, part]`` items."""
    items = list(record.history.item)
    histograms = {tuple(i.nested_key[:-1]) for i in items
                  if len(i.nested_key) > 1 and i.nested_key[-1] == "_type" and i.value_json == '"histogram"'}
    parts: dict[tuple[str, ...], dict[str, str]] = {}
    out: list[tuple[str | list[str], str]] = []
    for item in items:
        nested = list(item.nested_key)
        if len(nested) > 1 and tuple(nested[:-1]) in histograms:
            parts.setdefault(tuple(nested[:-1]), {})[nested[-1]] = item.value_json
        elif len(nested) > 1:
            out.append((nested, item.value_json))
        elif nested:
            out.append((nested[0], item.value_json))
        elif item.value_json.startswith('{"_type": "histogram"'):
            value = json.loads(item.value_json)
            out.extend(([item.key, part], json.dumps(value[part])) for part in ("_type", "bins", "values")
                       if part in value)
        else:
            out.append(([item.key], item.value_json))
    for path, p in parts.items():
        joined = {name: json.loads(text) for name, text in p.items()}
        out.append(("/".join(path), json.dumps(joined)))
    del record.history.item[:]
    for key, value in out:
        item = record.history.item.add()
        if isinstance(key, list):
            item.nested_key.extend(key)
        else:
            item.key = key
        item.value_json = value


TRANSFORMS: dict[str, Callable[[Path], bool]] = {
    "eval_row": eval_row, "idle_gpu": idle_gpu, "foreign_gpu": foreign_gpu, "truncate": truncate,
    "renamed": renamed,
}
