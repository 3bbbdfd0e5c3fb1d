"""The reproducer's settings and per-mode results: plain types ``reproduce`` fills and ``output`` writes.

Their own module, so ``reproduce`` (which measures) and ``output`` (which writes profile.json) both
import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from incidents.tools.repro.model import ModelSpec
from incidents.tools.repro.modes import Mode


class Round(TypedDict):
    """One interleaved round of a mode: its median step (None without timed steps), wall and CPU time."""

    median_step_s: float | None
    wall_s: float
    cpu_s: float

DEFAULT_PROJECT_STEPS = 11_250
#: Folder under ``--out`` that holds the kept torch.profiler capture.
PROFILE_DIR = "profiler"


@dataclass
class ReproSettings:
    """Everything a reproducer run needs; the CLI and the benchmark fill it in."""

    spec: ModelSpec
    modes: list[Mode]
    out: Path
    preset: str | None = None
    steps: int = 20
    warmup: int = 3
    device: str = "auto"
    project_steps: int = DEFAULT_PROJECT_STEPS
    profile_steps: int = 2
    seed: int = 0
    threads: int | None = None
    #: Interleaved rounds (baseline, watch, fix, baseline, …): machine drift hits every mode alike.
    rounds: int = 1
    progress: bool = True
    command: str | None = None
    lr: float = 2e-5


@dataclass
class ModeResult:
    """What one mode measured; turned into a ``modes[]`` entry of profile.json by output.py."""

    mode: Mode
    step_s: list[float] = field(default_factory=list)
    hook_s: list[float] = field(default_factory=list)
    phase_s: list[dict[str, float]] = field(default_factory=list)
    histograms_logged: int | None = 0
    training_steps: int = 0
    top_tensors: list[dict[str, Any]] = field(default_factory=list)
    device_utilization: dict[str, Any] | None = None
    wandb_run: dict[str, str] | None = None
    profile_files: dict[str, str] | None = None
    watch_thread_cpu_s: float | None = None
    #: Training-thread CPU seconds inside wandb.watch's hooks over the measured steps.
    hook_cpu_s: float | None = None
    model_info: dict[str, Any] | None = None
    complete: bool = False
    phase_timer: str = "host-clock"
    #: Per round: median step, wall and process CPU seconds of the measured steps.
    rounds: list[Round] = field(default_factory=list)
