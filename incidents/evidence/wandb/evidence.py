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
  value was equal) and ``counts`` (np.ndarray, one fewer than ``bins``). Histograms the user logged
  under other names keep kind ``other``; :func:`histogram_role` says which of them are gradients and
  which weights (``Gradients/…``, ``grad/…``, ``Weights/…``, ``params/…``), read from the key alone.
* ``media`` — per logged media key (``wandb.Image`` and the like): its type, how many were logged,
  how many distinct files (by the SDK's sha256), how many of the latest are one and the same file
  (``same_at_end``), and the first and last step; the files themselves are not read.
* ``ending`` — how the run ended, when the evidence says: ``how`` (finished, interrupted, crashed,
  exited, unfinished), ``exit_code``, ``detail`` (the exception line, when the console shows one),
  ``source``.
* ``environment`` — keys from :data:`ENVIRONMENT_KEYS`; absent facts are left out, never guessed.
* ``nonfinite`` — per key, the non-finite values the run actually logged (``nonfinite.py``): a NaN in
  ``history`` may only mean "not logged at this step". ``None`` when the reader could not tell
  (evidence stored before readers recorded it, a chart export).
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
    "gpu_name", "gpu_count", "gpu_memory_bytes", "cuda", "apple_gpu",
    "wandb", "torch", "transformers", "huggingface",
    "program", "args", "executable", "git_commit", "git_remote",
)

#: Where the evidence came from.
KINDS: tuple[str, ...] = ("run", "history_export", "system_export", "ui_csv")

HISTOGRAM_COLUMNS = ["key", "kind", "tensor", "step", "bins", "counts"]


#: Key words that mark a user-logged histogram as gradients or as weights (case-insensitive).
_GRADIENT_WORDS = frozenset({"grad", "grads", "gradient", "gradients"})
_WEIGHT_WORDS = frozenset({"weight", "weights", "param", "params", "parameter", "parameters"})


def histogram_role(key: str) -> str | None:
    """``gradients`` or ``parameters`` for a histogram key, from its words; None when it is neither.

    wandb.watch writes ``gradients/<name>`` and ``parameters/<name>``; people who log their own write
    ``Gradients/conv1.weight``, ``grad/fc``, ``Weights/conv1``, ``params/…``. The first path part
    decides, so ``Gradients/conv1.weight`` is a gradient although its tensor is a weight; a key whose
    first part says neither is judged by its last part (``conv1/grad``).
    """
    parts = [p.lower() for p in str(key).replace("\\", "/").split("/") if p]
    for part in (parts[:1] + parts[-1:]) if len(parts) > 1 else parts[:1]:
        words = set(part.replace(".", "_").replace("-", "_").split("_"))
        if words & _GRADIENT_WORDS:
            return "gradients"
        if words & _WEIGHT_WORDS:
            return "parameters"
    return None


def logged_tensor(key: str) -> str:
    """The tensor a hand-logged histogram is of: its key less the part that names its role
    (``Gradients/conv1.weight`` and ``Weights/conv1.weight`` are both ``conv1.weight``)."""
    parts = [p for p in str(key).split("/") if p]
    if len(parts) > 1 and histogram_role(parts[0]) is not None:
        parts = parts[1:]
    elif len(parts) > 1 and histogram_role(parts[-1]) is not None:
        parts = parts[:-1]
    return "/".join(parts) or str(key)


def histogram_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Tallies by watch kind, and of the user-logged ones by role (``logged_gradients``…)."""
    kinds = frame["kind"].tolist() if len(frame) else []
    counts = {k: kinds.count(k) for k in ("gradients", "parameters", "other")}
    roles = [histogram_role(key) for key, kind in zip(frame["key"], kinds, strict=True) if kind == "other"] \
        if len(frame) else []
    counts.update({f"logged_{r}": roles.count(r) for r in ("gradients", "parameters")})
    return counts


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
    #: Logged media per key: ``{"type", "count", "distinct", "same_at_end", "first_step", "last_step"}``.
    media: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: How the run ended (see the module docstring); empty when nothing says.
    ending: dict[str, Any] = field(default_factory=dict)
    #: Non-finite values logged, per key (see the module docstring); None when not known.
    nonfinite: dict[str, dict[str, Any]] | None = None

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
