"""What a profile's inspection holds, and the watch-work names every reader of a capture shares:
the per-phase times, the ``hourtab profile inspect --json`` shape, and the ops wandb.watch issues.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeGuard

from incidents.errors import InvalidEvidence
from incidents.evidence.profile_ranges import WATCH_RANGE_PREFIXES

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


def by_phase(measure: Callable[[str], float | None]) -> Phases:
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


HEURISTIC_WARNING = ("No wandb.watch ranges are labelled in this capture: watch work is estimated from the ops "
                      "wandb.watch issues (aten::histc, isfinite, min, max, item, clone, device-to-host "
                      "copies). It is a lower bound: the Python work around those ops (building each "
                      "histogram, sending it to the W&B service) is not an op; and the model may issue "
                      "some of the same ops itself.")


def starts_watch_label(name: str) -> bool:
    return name.startswith(WATCH_RANGE_PREFIXES)


def is_watch_name(name: str) -> bool:
    """A watch range, or an op wandb.watch issues (in a table we cannot see what encloses an op)."""
    return name in WATCH_OPS or starts_watch_label(name)


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

