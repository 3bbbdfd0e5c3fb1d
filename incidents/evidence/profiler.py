"""Profiler ingestion: where did a training step's time go, and how much of it was watch work?

Reads three kinds of evidence:

- ``hourtab-profile``: the reproducer's profile.json (figures it measured itself);
- ``key-averages-table``: the text of ``torch.profiler``'s ``key_averages().table()``;
- ``chrome-trace``: ``prof.export_chrome_trace()`` output, plain or gzip-compressed.

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
import re
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from hourtab.core.values import TooDeep, json_loads
from incidents.errors import EvidenceNotFound, InvalidEvidence
from incidents.evidence.profile_ranges import (
    INPUT_RANGE_PREFIXES,
    USER_STEP,
    WATCH_RANGE_PREFIXES,
    setup_header,
    step_ranges,
    table_watch,
    union_ms,
    watch_config,
)

MAX_BYTES = 512 * 2**20
PROFILE_SCHEMA = "hourtab.repro.profile"
#: Ops wandb.watch issues per tensor; used only when no watch range is labelled.
WATCH_OPS = frozenset({"aten::histc", "aten::isfinite", "aten::min", "aten::max", "aten::item",
                       "aten::_local_scalar_dense", "aten::clone"})
PHASE_LABELS = {"forward": "repro.forward", "backward": "repro.backward", "optimizer": "repro.optimizer"}

TOP_OPS = 10


class Phases(TypedDict):
    """Milliseconds in each training phase over the profiled steps; None where it was not measured."""

    forward_ms: float | None
    backward_ms: float | None
    optimizer_ms: float | None


def _by_phase(measure: Callable[[str], float | None]) -> Phases:
    """Each phase (``forward``, ``backward``, ``optimizer``) measured by ``measure``."""
    return Phases(forward_ms=measure("forward"), backward_ms=measure("backward"), optimizer_ms=measure("optimizer"))


class InvalidProfile(InvalidEvidence):
    """A file that is not a profile we can read, or one that is malformed; the message says where."""


@dataclass(frozen=True)
class ProfileInspection:
    """The attribution of one profile; ``to_dict()`` is the ``hourtab profile inspect --json`` shape."""

    kind: str
    steps: int | None
    total_ms: float
    watch_ms: float
    forward_ms: float | None = None
    backward_ms: float | None = None
    optimizer_ms: float | None = None
    top_ops: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    mode: str | None = None
    device_busy_ms: float | None = None
    #: What labelled the steps (``ProfilerStep#``, ``train_step``…); None when steps are unknown.
    step_label: str | None = None
    #: Watch configuration read from labelled per-tensor ranges (see ``profile_ranges.watch_config``).
    watch: dict[str, Any] | None = None
    #: Time fetching batches: DataLoader ``__next__`` ranges and host-to-device copies; None if none seen.
    input_ms: float | None = None
    #: The setup the capture says it is of (``preset=base batch_size=2 …`` above a table); {} if none.
    setup: dict[str, Any] = field(default_factory=dict)

    @property
    def watch_share(self) -> float | None:
        return self.watch_ms / self.total_ms if self.total_ms > 0 else None

    @property
    def input_share(self) -> float | None:
        return min(1.0, self.input_ms / self.total_ms) if self.input_ms is not None and self.total_ms > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "steps": self.steps, "total_ms": self.total_ms, "watch_ms": self.watch_ms,
                "watch_share": self.watch_share, "forward_ms": self.forward_ms,
                "backward_ms": self.backward_ms, "optimizer_ms": self.optimizer_ms,
                "device_busy_ms": self.device_busy_ms, "mode": self.mode,
                "top_ops": self.top_ops, "warnings": self.warnings, "step_label": self.step_label,
                "watch": self.watch, "input_ms": self.input_ms, "input_share": self.input_share,
                "setup": self.setup}


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
    if _TABLE_HEADER.search(text):
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


# --- key_averages().table() text -------------------------------------------------------------------

_TABLE_HEADER = re.compile(r"^\s*Name\s{2,}.*Self CPU %", re.MULTILINE)
_RULE = re.compile(r"^-+(\s{2}-+)*\s*$")
_TIME = re.compile(r"^(-?[0-9.]+)(ns|us|ms|s)$")
_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0}
_TOTAL = re.compile(r"^Self (CPU|CUDA|XPU|MTIA|HPU|PrivateUse1|Device) time total:\s*(\S+)", re.MULTILINE)


def _time_ms(value: str, where: str) -> float:
    match = _TIME.match(value.strip())
    if not match:
        raise InvalidProfile(f"{where}: {value.strip()!r} is not a time such as '1.5ms'.")
    return float(match.group(1)) * _UNIT_MS[match.group(2)]


@dataclass(frozen=True)
class _TableLayout:
    """Where a key_averages table's header is and which character spans hold its columns."""

    header_at: int
    spans: list[tuple[int, int]]
    index: dict[str, int]
    device_column: str | None


def inspect_key_averages_table(text: str, source: str = "table") -> ProfileInspection:
    """Attribute a ``key_averages().table()`` dump (CPU times; CUDA columns reported when present)."""
    lines = text.splitlines()
    layout = _table_layout(lines, source)
    rows = _table_rows(lines, layout, source)
    warnings: list[str] = []
    totals = {kind: _time_ms(value, source) for kind, value in _TOTAL.findall(text)}
    if "CPU" in totals:
        total_ms = totals["CPU"]
    else:
        total_ms = sum(r["self_ms"] for r in rows)
        warnings.append("No 'Self CPU time total' line: total is the sum of the rows shown (a lower bound).")
    steps = _table_steps(rows, warnings)
    watch_ms = _table_watch_ms(rows, warnings)
    phases = _table_phases(rows, partial(_inclusive_ms, rows), warnings)
    if layout.device_column:
        warnings.append(f"The table has '{layout.device_column}' columns; shares here use CPU time "
                        "(self_device_ms in top_ops shows device time).")
    ranked = sorted((r for r in rows if r["name"] != "ProfilerStep*"), key=lambda r: r["self_ms"], reverse=True)
    top = [{**r, "watch": _is_watch_name(r["name"])} for r in ranked[:TOP_OPS]]
    return ProfileInspection("key-averages-table", steps, total_ms, min(watch_ms, total_ms), top_ops=top,
                             warnings=warnings, **phases,
                             device_busy_ms=totals.get("CUDA") or totals.get("Device"),
                             watch=table_watch(rows, steps), input_ms=_table_input_ms(rows),
                             setup=setup_header(lines[:layout.header_at - 1]))


def _table_layout(lines: list[str], source: str) -> _TableLayout:
    """The header under its dashed rule; the rule's dashes give each column's characters."""
    header_at = next((i for i, line in enumerate(lines) if _TABLE_HEADER.match(line)), None)
    if header_at is None or header_at == 0 or not _RULE.match(lines[header_at - 1]):
        raise InvalidProfile(f"{source}: no key_averages table header (a dashed rule above 'Name  Self CPU %').")
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[header_at - 1])]
    columns = [lines[header_at][a:b + 2].strip() for a, b in spans]
    missing = [c for c in ("Name", "Self CPU", "CPU total", "# of Calls") if c not in columns]
    if missing:
        raise InvalidProfile(f"{source}: table lacks the column(s) {', '.join(missing)}.")
    index = {name: i for i, name in enumerate(columns)}
    device_column = next((c for c in ("Self CUDA", "Self Device", "Self XPU") if c in index), None)
    return _TableLayout(header_at, spans, index, device_column)


def _table_rows(lines: list[str], layout: _TableLayout, source: str) -> list[dict[str, Any]]:
    """The rows from the header to the next rule or blank line, times in ms."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines[layout.header_at + 1:], start=layout.header_at + 2):
        if not line.strip() or _RULE.match(line):
            if rows:
                break
            continue
        rows.append(_table_row([line[a:b + 2].strip() for a, b in layout.spans], layout, f"{source} line {number}"))
    if not rows:
        raise InvalidProfile(f"{source}: the table has a header but no rows.")
    return rows


def _table_row(cells: list[str], layout: _TableLayout, where: str) -> dict[str, Any]:
    index, device_column = layout.index, layout.device_column
    try:
        calls = int(cells[index["# of Calls"]])
    except ValueError as e:
        raise InvalidProfile(f"{where}: '# of Calls' is {cells[index['# of Calls']]!r}, not a count.") from e
    return {"name": cells[index["Name"]], "self_ms": _time_ms(cells[index["Self CPU"]], where),
            "total_ms": _time_ms(cells[index["CPU total"]], where), "calls": calls,
            "self_device_ms": _time_ms(cells[index[device_column]], where) if device_column else None}


def _inclusive_ms(rows: list[dict[str, Any]], predicate: Callable[[str], bool]) -> float:
    return sum(r["total_ms"] for r in rows if predicate(r["name"]))


def _table_steps(rows: list[dict[str, Any]], warnings: list[str]) -> int | None:
    step_rows = [r for r in rows if r["name"] == "ProfilerStep*"] or [r for r in rows if USER_STEP.match(r["name"])]
    if not step_rows:
        warnings.append("No ProfilerStep* row (profiled without a schedule): the number of steps is unknown.")
        return None
    return sum(r["calls"] for r in step_rows)


def _table_watch_ms(rows: list[dict[str, Any]], warnings: list[str]) -> float:
    """The labelled watch ranges' CPU total, or (unlabelled) the ops wandb.watch issues, with a warning."""
    labelled = [r for r in rows if r["name"].startswith(WATCH_RANGE_PREFIXES)]
    if labelled:
        return sum(r["total_ms"] for r in labelled)
    # CPU total of the outer ops; _local_scalar_dense only where no aten::item row wraps it.
    names = {r["name"] for r in rows}
    outer = WATCH_OPS - ({"aten::_local_scalar_dense"} if "aten::item" in names else set())
    warnings.append(_HEURISTIC_WARNING)
    return _inclusive_ms(rows, lambda name: name in outer)


def _table_input_ms(rows: list[dict[str, Any]]) -> float | None:
    """Input loading: the labelled loading ranges plus host-to-device copies; None when neither is there."""
    loading = [r for r in rows if r["name"].startswith(INPUT_RANGE_PREFIXES)]
    copies = [r for r in rows if r["name"].startswith("Memcpy HtoD") and r["self_device_ms"] is not None]
    if not loading and not copies:
        return None
    return sum(r["total_ms"] for r in loading) + sum(r["self_device_ms"] for r in copies)


_HEURISTIC_WARNING = ("No wandb.watch ranges are labelled in this capture: watch work is estimated from the ops "
                      "wandb.watch issues (aten::histc, isfinite, min, max, item, clone, device-to-host "
                      "copies). It is a lower bound: the Python work around those ops (building each "
                      "histogram, sending it to the W&B service) is not an op; and the model may issue "
                      "some of the same ops itself.")


def _starts_watch_label(name: str) -> bool:
    return name.startswith(WATCH_RANGE_PREFIXES)


def _is_watch_name(name: str) -> bool:
    """A watch range, or an op wandb.watch issues (in a table we cannot see what encloses an op)."""
    return name in WATCH_OPS or _starts_watch_label(name)


def _table_phases(rows: list[dict[str, Any]], inclusive: Any, warnings: list[str]) -> Phases:
    names = {r["name"] for r in rows}
    if all(label in names for label in PHASE_LABELS.values()):
        return _by_phase(lambda phase: inclusive(lambda n: n == PHASE_LABELS[phase]))
    optimizer = inclusive(lambda n: n.startswith(("Optimizer.step#", "Optimizer.zero_grad#")))
    backward = inclusive(lambda n: n.startswith("autograd::engine::evaluate_function"))
    warnings.append("Phases are not labelled (repro.forward/backward/optimizer): backward is the sum of autograd "
                    "engine ranges, optimizer of Optimizer.step/zero_grad ranges, forward is unknown.")
    return Phases(forward_ms=None, backward_ms=backward or None, optimizer_ms=optimizer or None)


# --- chrome traces -----------------------------------------------------------------------------------

_HOST_CATEGORIES = {"cpu_op", "user_annotation", "python_function", "operator"}
_DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def inspect_chrome_trace(events: Any, source: str = "trace") -> ProfileInspection:
    """Attribute a chrome trace's complete (``ph: X``) events; times are µs in the file, ms here."""
    if not isinstance(events, list):
        raise InvalidProfile(f"{source}: 'traceEvents' is not a list.")
    complete = []
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            raise InvalidProfile(f"{source}: traceEvents[{i}] is not an object.")
        if event.get("ph") != "X":
            continue
        name, ts, dur = event.get("name"), event.get("ts"), event.get("dur")
        if not isinstance(name, str) or not _is_number(ts) or not _is_number(dur) or dur < 0:
            raise InvalidProfile(f"{source}: traceEvents[{i}] is a complete event without a name, a numeric "
                                 "'ts' and a non-negative 'dur'.")
        complete.append(event)
    if not complete:
        raise InvalidProfile(f"{source}: no complete ('ph': 'X') events with durations.")
    warnings: list[str] = []
    host = [e for e in complete if e.get("cat", "cpu_op") in _HOST_CATEGORIES]
    device = [e for e in complete if e.get("cat") in _DEVICE_CATEGORIES]
    step_events, step_label = step_ranges(host)
    if step_events:
        steps = len(step_events)
        total_ms = union_ms(step_events)
    else:
        steps = None
        spans = [(e["ts"], e["ts"] + e["dur"]) for e in host or complete]
        total_ms = (max(b for _, b in spans) - min(a for a, _ in spans)) / 1000.0
        warnings.append("No ProfilerStep# or train_step ranges: the total is the span of the trace and steps "
                        "are unknown.")
    labelled = [e for e in host if e["name"].startswith(WATCH_RANGE_PREFIXES)]
    if labelled:
        watch_ms = union_ms(labelled)
    else:
        watch_events = [e for e in host if e["name"] in WATCH_OPS]
        watch_events += [e for e in device if e.get("cat") == "gpu_memcpy" and "DtoH" in e["name"]]
        watch_ms = union_ms(watch_events)
        warnings.append(_HEURISTIC_WARNING)
    is_watch = _is_watch_name
    phases = _trace_phases(host, step_events, warnings)
    top = _top_trace_ops(host, is_watch, bool(labelled))
    device_busy = union_ms(device) if device else None
    if device:
        warnings.append(f"The trace has {len(device)} device events: device_busy_ms is the time at least one "
                        "kernel or copy ran; shares use the host timeline.")
    loading = [e for e in host if e["name"].startswith(INPUT_RANGE_PREFIXES)]
    loading += [e for e in device if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"]]
    if step_events:
        # Only what falls inside the profiled steps counts against them.
        loading = [e for e in loading if any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in step_events)]
    return ProfileInspection("chrome-trace", steps, total_ms, min(watch_ms, total_ms), top_ops=top,
                             warnings=warnings, device_busy_ms=device_busy, step_label=step_label,
                             watch=watch_config(host, step_events), input_ms=union_ms(loading) if loading else None,
                             **phases)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _trace_phases(host: list[dict[str, Any]], step_events: list[dict[str, Any]],
                  warnings: list[str]) -> Phases:
    labelled = {phase: [e for e in host if e["name"] == label] for phase, label in PHASE_LABELS.items()}
    if all(labelled.values()):
        return _by_phase(lambda phase: union_ms(labelled[phase]))
    optimizer = [e for e in host if e["name"].startswith(("Optimizer.step#", "Optimizer.zero_grad#"))]
    backward = [e for e in host if e["name"].startswith("autograd::engine::evaluate_function")]
    forward_ms = None
    if step_events and backward:
        # Forward: from each step's start to its first backward range.
        forward_ms = 0.0
        for step in step_events:
            inside = [e["ts"] for e in backward if step["ts"] <= e["ts"] <= step["ts"] + step["dur"]]
            if inside:
                forward_ms += (min(inside) - step["ts"]) / 1000.0
    warnings.append("Phases are not labelled (repro.forward/backward/optimizer): backward is the autograd engine's "
                    "ranges, optimizer the Optimizer.step/zero_grad ranges, forward each step's start to its "
                    "first backward range.")
    return Phases(forward_ms=forward_ms, backward_ms=union_ms(backward) if backward else None,
                  optimizer_ms=union_ms(optimizer) if optimizer else None)


def _top_trace_ops(host: list[dict[str, Any]], is_watch: Any, labelled: bool) -> list[dict[str, Any]]:
    """Self time per op name: each event's duration less its direct children's, per thread.

    With labelled watch ranges an op counts as watch work when most of its self time ran inside one.
    """
    totals: dict[str, dict[str, float]] = defaultdict(lambda: {"self": 0.0, "total": 0.0, "calls": 0,
                                                               "in_watch": 0.0})
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for event in host:
        by_thread[(event.get("pid"), event.get("tid"))].append(event)
    for events in by_thread.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[list[Any]] = []  # [end, event, child time, inside a watch range]
        for event in events:
            end = event["ts"] + event["dur"]
            while stack and event["ts"] >= stack[-1][0]:
                _close(stack.pop(), totals)
            inside = bool(stack) and (stack[-1][3] or _starts_watch_label(stack[-1][1]["name"]))
            if stack:
                stack[-1][2] += event["dur"]
            stack.append([end, event, 0.0, inside])
        while stack:
            _close(stack.pop(), totals)
    ranked = sorted(((n, t) for n, t in totals.items() if not n.startswith("ProfilerStep#")),
                    key=lambda item: item[1]["self"], reverse=True)
    return [{"name": name, "self_ms": t["self"] / 1000.0, "total_ms": t["total"] / 1000.0,
             "calls": int(t["calls"]), "self_device_ms": None,
             "watch": bool(is_watch(name)) or (labelled and t["in_watch"] > 0.5 * t["self"] > 0)}
            for name, t in ranked[:TOP_OPS]]


def _close(frame: list[Any], totals: dict[str, dict[str, float]]) -> None:
    _, event, children, inside = frame
    entry = totals[event["name"]]
    own = max(0.0, event["dur"] - children)
    entry["self"] += own
    entry["total"] += event["dur"]
    entry["calls"] += 1
    if inside:
        entry["in_watch"] += own


# --- our own profile.json ----------------------------------------------------------------------------

def _inspect_hourtab_profile(path: Path, document: dict[str, Any]) -> ProfileInspection:
    """Figures the reproducer measured, for its profiled (heaviest) mode; top ops from its table."""
    version = document.get("schema_version")
    if version != 1:
        raise InvalidProfile(f"{path.name}: profile.json schema_version {version!r}; this HourTab reads version 1.")
    modes = document.get("modes")
    if not isinstance(modes, list) or not all(isinstance(m, dict) for m in modes):
        raise InvalidProfile(f"{path.name}: 'modes' must be a list of objects.")
    measured = [m for m in modes if _is_number(m.get("mean_step_s")) and isinstance(m.get("step_times_s"), list)]
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
        phases = _by_phase(lambda p: float(given[p]) * steps if _is_number(given.get(p)) else None)
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
