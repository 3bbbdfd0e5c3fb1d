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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
