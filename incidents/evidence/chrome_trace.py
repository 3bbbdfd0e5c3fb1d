"""Reading a chrome trace (``prof.export_chrome_trace()``, plain or gzip-compressed): host and
device events, overlapping ranges merged before summing so nested ops are never counted twice.
"""

from __future__ import annotations

from collections import defaultdict
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
    is_number,
    is_watch_name,
    starts_watch_label,
)
from incidents.evidence.profile_ranges import (
    INPUT_RANGE_PREFIXES,
    WATCH_RANGE_PREFIXES,
    step_ranges,
    union_ms,
    watch_config,
)

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
        if not isinstance(name, str) or not is_number(ts) or not is_number(dur) or dur < 0:
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
        warnings.append(HEURISTIC_WARNING)
    is_watch = is_watch_name
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


def _trace_phases(host: list[dict[str, Any]], step_events: list[dict[str, Any]],
                  warnings: list[str]) -> Phases:
    labelled = {phase: [e for e in host if e["name"] == label] for phase, label in PHASE_LABELS.items()}
    if all(labelled.values()):
        return by_phase(lambda phase: union_ms(labelled[phase]))
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
            inside = bool(stack) and (stack[-1][3] or starts_watch_label(stack[-1][1]["name"]))
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
