"""Labelled ranges in a capture: training steps, watch work and input, before any op-name heuristic.

Steps come from ``ProfilerStep#N`` ranges, else from the user's own ``record_function`` ranges
(``train_step``, ``training_step``…). Watch work is any ``wandb.*`` range; the per-tensor ranges
(``…log_tensor_stats``) also give the watch configuration: in how many steps watch fired
(→ ``log_freq``) and how many tensors it logged each time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: Labelled ranges that are watch work: any wandb range, and HourTab's fastwatch.
WATCH_RANGE_PREFIXES = ("wandb.", "hourtab.fastwatch", "fastwatch")
#: Ranges torch.profiler records while a DataLoader produces a batch (``enumerate(DataLoader)#…__next__``).
INPUT_RANGE_PREFIXES = ("enumerate(DataLoader)", "DataLoader.__next__")
_SETUP_PAIR = re.compile(r"([A-Za-z_][\w.-]*)=([^\s,;]+)")
USER_STEP = re.compile(r"^(train(ing)?[_ .-]?step|step|train[_ .-]?batch|optimizer[_ .-]?step)(#\d+)?$",
                       re.IGNORECASE)


def is_tensor_range(name: str) -> bool:
    """One range per watched tensor per logging step (wandb's ``log_tensor_stats``)."""
    return name.startswith("wandb.") and name.endswith("log_tensor_stats")


def step_ranges(host: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """The step ranges and their label: ProfilerStep# first, then a repeated user step range."""
    steps = [e for e in host if e["name"].startswith("ProfilerStep#")]
    if steps:
        return steps, "ProfilerStep#"
    user = [e for e in host if USER_STEP.match(e["name"])]
    if user:
        names = sorted({e["name"] for e in user})
        return user, names[0] if len(names) == 1 else ", ".join(names[:3])
    return [], None


def watch_config(host: list[dict[str, Any]], steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Ranges per logging step and the implied log_freq; None without labelled per-tensor ranges."""
    tensor = [e for e in host if is_tensor_range(e["name"])]
    if not tensor:
        return None
    result: dict[str, Any] = {"ranges": len(tensor), "label": tensor[0]["name"], "steps": len(steps) or None,
                              "logging_steps": None, "log_freq": None, "histograms_per_logging_step": None}
    if steps:
        counts = [sum(1 for e in tensor if s["ts"] <= e["ts"] <= s["ts"] + s["dur"]) for s in steps]
        logging = [c for c in counts if c]
        result["logging_steps"] = len(logging)
        if logging:
            result["histograms_per_logging_step"] = round(sum(logging) / len(logging))
            # Watch fired in every step → log_freq 1; in one of k steps → about k (a short trace is coarse).
            result["log_freq"] = max(1, round(len(steps) / len(logging)))
    return result


def union_ms(events: Iterable[dict[str, Any]]) -> float:
    """Wall time covered by at least one of ``events`` (overlaps and nesting counted once)."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events)
    total, current_start, current_end = 0.0, None, None
    for start, end in spans:
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total / 1000.0


def setup_header(lines: list[str]) -> dict[str, Any]:
    """``key=value`` pairs written above a table (``# preset=base batch_size=2 seq_len=128``): the setup
    the capture is of, so a table of another model is never taken for this run's."""
    found: dict[str, Any] = {}
    for line in lines:
        for key, value in _SETUP_PAIR.findall(line):
            found[key] = int(value) if value.isdigit() else value
    return found


def table_watch(rows: list[dict[str, Any]], steps: int | None) -> dict[str, Any] | None:
    """Watch's per-tensor ranges in a table: calls per profiled step, a lower bound per logging step."""
    ranges = sum(r["calls"] for r in rows if is_tensor_range(r["name"]))
    if not ranges:
        return None
    return {"ranges": ranges, "label": next(r["name"] for r in rows if is_tensor_range(r["name"])),
            "steps": steps, "logging_steps": None, "log_freq": None, "histograms_per_logging_step": None,
            # A table cannot tell in which steps watch fired: per profiled step is all it gives.
            "histograms_per_step": round(ranges / steps) if steps else None}
