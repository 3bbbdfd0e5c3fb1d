"""The run-evidence model: one shape for every way a consultant hands us a W&B run.

A ``.wandb`` file, a legacy run folder, a public-API export and the UI's chart CSV all become a
:class:`RunEvidence`, so diagnosis, charts and reports are written once against this model.

Column conventions (the contract other modules build on):

* ``history`` — indexed by step (``_step``, int64, unique, ascending); ``_runtime`` (s since start)
  and ``_timestamp`` (Unix s) when known; one float64 column per scalar metric; ``step_time_s``,
  the seconds per step derived from ``_runtime`` (or ``_timestamp``) deltas divided by step deltas.
* ``system`` — indexed by ``_timestamp`` (Unix s, float64); ``_runtime``; metrics under their
  server-side names ``system.<key>`` (``system.gpu.0.gpu`` utilisation %, ``system.gpu.0.memoryAllocated``,
  ``system.gpu.0.powerWatts``, ``system.cpu``, ``system.memory_percent``, ``system.proc.memory.rssMB`` …).
* ``histograms`` — columns ``key`` (e.g. ``gradients/0.weight``), ``kind`` (``gradients`` or
  ``parameters`` for ``wandb.watch``; ``other`` for histograms the user logged), ``tensor`` (the name
  after the kind prefix), ``step``, ``bins`` (edges, np.ndarray; 65 for watch's 64 bins, 2 when every
  value was equal) and ``counts`` (np.ndarray, one fewer than ``bins``).
* ``environment`` — keys from :data:`ENVIRONMENT_KEYS`; absent facts are left out, never guessed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hourtab.core.values import xml_safe

#: Environment facts we extract, in display order.
ENVIRONMENT_KEYS: tuple[str, ...] = (
    "python", "os", "host", "cpu", "cpu_count", "cpu_count_logical", "memory_bytes",
    "gpu_name", "gpu_count", "gpu_memory_bytes", "cuda",
    "wandb", "torch", "transformers", "huggingface",
    "program", "args", "executable", "git_commit", "git_remote",
)

#: Where the evidence came from.
KINDS: tuple[str, ...] = ("run", "history_export", "system_export", "ui_csv")

HISTOGRAM_COLUMNS = ["key", "kind", "tensor", "step", "bins", "counts"]


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return xml_safe(value)
    if isinstance(value, list):
        return [xml_safe(v) if isinstance(v, str) else v for v in value]
    return value


def empty_history() -> pd.DataFrame:
    return pd.DataFrame(index=pd.Index([], dtype="int64", name="_step"))


def empty_system() -> pd.DataFrame:
    return pd.DataFrame(index=pd.Index([], dtype="float64", name="_timestamp"))


def empty_histograms() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="int64" if c == "step" else "object") for c in HISTOGRAM_COLUMNS})


@dataclass
class RunEvidence:
    """Everything we know about one run, parsed once; stored as Parquet + JSON by ``store``."""

    kind: str = "run"
    run_id: str = ""
    name: str = ""
    project: str = ""
    tags: list[str] = field(default_factory=list)
    state: str = "unknown"            # finished | failed | unfinished | unknown
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    runtime_s: float | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    history: pd.DataFrame = field(default_factory=empty_history)
    system: pd.DataFrame = field(default_factory=empty_system)
    histograms: pd.DataFrame = field(default_factory=empty_histograms)
    warnings: list[str] = field(default_factory=list)
    #: Histogram tallies over the whole run, also counting any not kept in ``histograms``.
    histogram_counts: dict[str, int] = field(default_factory=dict)

    def strip_forbidden_text(self) -> None:
        """Remove characters XML 1.0 forbids from names shown in reports, feeds and PDFs."""
        self.run_id, self.name, self.project, self.state = (
            xml_safe(self.run_id), xml_safe(self.name), xml_safe(self.project), xml_safe(self.state))
        self.tags = [xml_safe(str(t)) for t in self.tags]
        self.environment = {k: _plain(v) for k, v in self.environment.items()}
        self.warnings = [xml_safe(w) for w in self.warnings]
        for frame in (self.history, self.system):
            frame.columns = [xml_safe(str(c)) for c in frame.columns]

    @property
    def metrics(self) -> list[str]:
        """Logged scalar metric names (without ``_step``/``_runtime``/``_timestamp``/derived columns)."""
        return [c for c in self.history.columns if not c.startswith("_") and c != "step_time_s"]

    @property
    def system_metrics(self) -> list[str]:
        return [c for c in self.system.columns if c.startswith("system.")]

    @property
    def steps(self) -> int:
        return int(len(self.history.index))
