"""Reading ``torch.profiler``'s ``key_averages().table()`` text: steps, watch work, phases, input
time and the top ops, from the table's inclusive and self times.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from incidents.evidence.profile_inspection import (
    HEURISTIC_WARNING,
    PHASE_LABELS,
    TOP_OPS,
    WATCH_OPS,
    InvalidProfile,
    Phases,
    ProfileInspection,
    by_phase,
    is_watch_name,
)
from incidents.evidence.profile_ranges import (
    INPUT_RANGE_PREFIXES,
    USER_STEP,
    WATCH_RANGE_PREFIXES,
    setup_header,
    table_watch,
)

TABLE_HEADER = re.compile(r"^\s*Name\s{2,}.*Self CPU %", re.MULTILINE)
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
    top = [{**r, "watch": is_watch_name(r["name"])} for r in ranked[:TOP_OPS]]
    return ProfileInspection("key-averages-table", steps, total_ms, min(watch_ms, total_ms), top_ops=top,
                             warnings=warnings, **phases,
                             device_busy_ms=totals.get("CUDA") or totals.get("Device"),
                             watch=table_watch(rows, steps), input_ms=_table_input_ms(rows),
                             setup=setup_header(lines[:layout.header_at - 1]))


def _table_layout(lines: list[str], source: str) -> _TableLayout:
    """The header under its dashed rule; the rule's dashes give each column's characters."""
    header_at = next((i for i, line in enumerate(lines) if TABLE_HEADER.match(line)), None)
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
    warnings.append(HEURISTIC_WARNING)
    return _inclusive_ms(rows, lambda name: name in outer)


def _table_input_ms(rows: list[dict[str, Any]]) -> float | None:
    """Input loading: the labelled loading ranges plus host-to-device copies; None when neither is there."""
    loading = [r for r in rows if r["name"].startswith(INPUT_RANGE_PREFIXES)]
    copies = [r for r in rows if r["name"].startswith("Memcpy HtoD") and r["self_device_ms"] is not None]
    if not loading and not copies:
        return None
    return sum(r["total_ms"] for r in loading) + sum(r["self_device_ms"] for r in copies)

def _table_phases(rows: list[dict[str, Any]], inclusive: Any, warnings: list[str]) -> Phases:
    names = {r["name"] for r in rows}
    if all(label in names for label in PHASE_LABELS.values()):
        return by_phase(lambda phase: inclusive(lambda n: n == PHASE_LABELS[phase]))
    optimizer = inclusive(lambda n: n.startswith(("Optimizer.step#", "Optimizer.zero_grad#")))
    backward = inclusive(lambda n: n.startswith("autograd::engine::evaluate_function"))
    warnings.append("Phases are not labelled (repro.forward/backward/optimizer): backward is the sum of autograd "
                    "engine ranges, optimizer of Optimizer.step/zero_grad ranges, forward is unknown.")
    return Phases(forward_ms=None, backward_ms=backward or None, optimizer_ms=optimizer or None)
