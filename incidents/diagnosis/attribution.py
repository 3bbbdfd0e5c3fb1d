"""Which of the node's GPUs a run used: the GPU rules judge those, never the node's mean.

W&B samples every GPU of the node (``gpu.<i>.*``), including GPUs other jobs use and idle ones.
A run's own GPUs are known, in order of trust, from:

1. ``gpu.process.<i>.*`` keys — the SDK writes them for the GPUs its process (or its children)
   holds memory on;
2. the node's only GPU;
3. memory held: a GPU whose memory sits :data:`HOLD_MARGIN` points above the node's idle level (the
   least-used GPU's, when that one is idle) is held by a process; when only one GPU is held it is
   the run's, when none is the run used no GPU. When several are held and none is known to be the
   run's, their verdicts are compared: if every held GPU is busy (or every one under-used) the
   verdict holds whichever are the run's; otherwise the attribution is *not determined*.

The samples read are those taken while the run trained (:func:`steady_rows`), and a run's GPU
utilisation and memory (:func:`run_gpu`, :func:`run_gpu_memory`) are read on its GPUs only: the
one figure every rule and report shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: Percentage points of memory above the node's idle level that mean a process holds the GPU.
HOLD_MARGIN = 1.0
#: Utilisation (%) at or below which a GPU counts as idle.
IDLE_UTIL = 5.0
_UTIL = re.compile(r"system\.gpu\.(?:process\.)?(\d+)\.gpu")


@dataclass(frozen=True)
class Attribution:
    """The GPUs whose samples a GPU verdict reads, and how they were chosen."""

    #: process, only, memory, agree, idle, undetermined; or none (no GPU metrics)
    how: str
    gpus: tuple[int, ...] = ()
    #: Per-GPU steady means on the node: {index: (utilisation %, memory %)}.
    node: dict[int, tuple[float, float | None]] = field(default_factory=dict)

    @property
    def determined(self) -> bool:
        return self.how not in ("undetermined", "none")

    @property
    def holds_memory(self) -> bool:
        """The GPUs were found by the memory the run holds on them: the model is on them."""
        return self.how in ("memory", "agree")

    def columns(self, system: pd.DataFrame, metric: str) -> list[str]:
        """The run's columns of ``metric`` (``gpu``, ``memoryAllocated``), by GPU index."""
        out = []
        for i in self.gpus:
            for name in (f"system.gpu.{i}.{metric}", f"system.gpu.process.{i}.{metric}"):
                if name in system.columns:
                    out.append(name)
                    break
        return out

    def text(self) -> str:
        """How a verdict names the GPUs it read."""
        ids = ", ".join(str(i) for i in self.gpus)
        label = f"GPU {ids}" if len(self.gpus) == 1 else f"GPUs {ids}"
        return {"process": f"{label} (the run's process holds it: gpu.process keys)",
                "only": f"{label} (the node's only GPU)",
                "memory": f"{label} (the only GPU of the node holding memory)",
                "agree": f"{label} (the GPUs of the node holding memory; no gpu.process keys say which are "
                         "the run's, and they agree)",
                "idle": f"{label} (no GPU of the node holds memory)",
                "undetermined": f"{label} hold memory, and no gpu.process keys say which are the run's",
                "none": "no GPU metrics"}[self.how]


def gpu_indices(system: pd.DataFrame | None) -> list[int]:
    if system is None:
        return []
    return sorted({int(m.group(1)) for c in system.columns if (m := _UTIL.fullmatch(str(c)))})


def attribute(system: pd.DataFrame | None, steady: pd.DataFrame | None, low_util: float) -> Attribution:
    """The run's GPUs from the node's samples; ``steady`` is the samples taken while it trained."""
    indices = gpu_indices(system)
    if system is None or not indices:
        return Attribution("none")
    frame = steady if steady is not None and len(steady) else system
    node = {i: _means(frame, i) for i in indices}
    process = sorted({int(c.split(".")[3]) for c in system.columns if re.fullmatch(r"system\.gpu\.process\.\d+\.gpu",
                                                                                       str(c))})
    if process:
        return Attribution("process", tuple(process), node)
    if len(indices) == 1:
        return Attribution("only", tuple(indices), node)
    held = _held(node)
    if not held:
        return Attribution("idle", tuple(indices), node)
    if len(held) == 1:
        return Attribution("memory", tuple(held), node)
    busy = {node[i][0] >= low_util for i in held}
    return Attribution("agree" if len(busy) == 1 else "undetermined", tuple(held), node)


def _means(frame: pd.DataFrame, i: int) -> tuple[float, float | None]:
    util = _mean(frame, f"system.gpu.{i}.gpu", f"system.gpu.process.{i}.gpu")
    memory = _mean(frame, f"system.gpu.{i}.memoryAllocated", f"system.gpu.process.{i}.memoryAllocated")
    return (util if util is not None else float("nan")), memory


def _mean(frame: pd.DataFrame, *names: str) -> float | None:
    for name in names:
        if name in frame.columns:
            values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype="float64")
            if np.isfinite(values).any():
                return float(np.nanmean(values))
    return None


def _held(node: dict[int, tuple[float, float | None]]) -> list[int]:
    """GPUs a process holds memory on: above the idle level, or all when even the least-used is busy."""
    known = {i: m for i, (_, m) in node.items() if m is not None}
    if not known:
        return []
    least = min(known, key=lambda i: known[i])
    if not node[least][0] <= IDLE_UTIL:
        return sorted(known)          # even the least-used GPU works: every GPU is in use
    return sorted(i for i, m in known.items() if m >= known[least] + HOLD_MARGIN)


def gpu_columns(system: pd.DataFrame | None) -> list[str]:
    """The node's per-GPU utilisation columns (``system.gpu.<i>.gpu``, or the process's own
    ``system.gpu.process.<i>.gpu`` where only that was exported)."""
    if system is None:
        return []
    cols = [str(c) for c in system.columns]
    own = [c for c in cols if re.fullmatch(r"system\.gpu\.\d+\.gpu", c)]
    found = {c.split(".")[2] for c in own}
    extra = [c for c in cols if re.fullmatch(r"system\.gpu\.process\.\d+\.gpu", c) and c.split(".")[3] not in found]
    return sorted(own + extra)


def training_window(history: pd.DataFrame | None) -> tuple[float, float] | None:
    """(first, last) ``_timestamp`` of the logged steps: when the run trained. None when the history
    bounds no span: fewer than two timestamps, or rows logged within one instant (a single row and its
    evaluation, a run that logged everything at its end); then every sample is read."""
    if history is None or "_timestamp" not in history:
        return None
    stamps = pd.to_numeric(history["_timestamp"], errors="coerce").dropna()
    if len(stamps) < 2 or not float(stamps.max()) > float(stamps.min()):
        return None
    return float(stamps.iloc[0]), float(stamps.iloc[-1])


def steady_rows(system: pd.DataFrame | None, trim: float = 0.05,
                history: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """Every column of the system samples with a GPU figure, taken while training ran (see above)."""
    cols = gpu_columns(system)
    if system is None or not cols:
        return None
    frame = system.loc[system[cols].notna().any(axis=1)]
    window = training_window(history)
    if window is not None and len(frame):
        frame = frame[(frame.index >= window[0]) & (frame.index <= window[1])]
    if frame.empty:
        return frame
    n = len(frame)
    cut = int(n * trim)
    if n - 2 * cut >= 3:
        frame = frame.iloc[cut: n - cut]
    return frame


def run_gpus(run: Any, low_util: float = 50.0, steady: pd.DataFrame | None = None) -> Attribution:
    """The GPUs the run used (``attribution.attribute``): its own, never the node's idle or foreign ones."""
    system, history = run.system, run.history
    return attribute(system, steady if steady is not None else steady_rows(system, history=history), low_util)


def run_gpu(run: Any, gpus: Attribution | None = None, steady: pd.DataFrame | None = None) -> tuple[float | None, int]:
    """A run's steady-state GPU utilisation during training over the GPUs it used (all the GPUs that
    hold memory when which are its own is not determined), and the sample count: one figure for all.
    ``gpus`` and ``steady``: the run's attribution and samples when the caller has them already."""
    system, history = run.system, run.history
    frame = steady if steady is not None else steady_rows(system, history=history)
    if frame is None or frame.empty:
        return None, 0
    cols = (gpus or run_gpus(run, steady=frame)).columns(frame, "gpu")
    values = frame[cols].to_numpy(dtype="float64") if cols else np.empty(0)
    if not np.isfinite(values).any():
        return None, int(len(frame))
    return float(np.nanmean(values)), int(len(frame))


def run_gpu_memory(run: Any, gpus: Attribution | None = None) -> float | None:
    """Mean GPU memory allocated (% of the device) on the GPUs the run used; None when not recorded."""
    system = run.system
    if system is None:
        return None
    cols = (gpus or run_gpus(run)).columns(system, "memoryAllocated")
    values = system[cols].to_numpy(dtype="float64") if cols else np.empty(0)
    return float(np.nanmean(values)) if np.isfinite(values).any() else None
