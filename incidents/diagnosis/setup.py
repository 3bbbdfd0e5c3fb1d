"""Is this evidence about the same setup? Model signatures, watch configurations, comparable runs.

A figure measured on another model, another watch configuration or other hardware says nothing
about this run's slowdown. Each piece of evidence gets a signature; the report shows every
difference, and the rules use a figure only when its signature matches (or scale it, and say so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from incidents.diagnosis import signals

#: Config keys that name the model, in the order we trust them.
MODEL_KEYS = ("model_name", "model_name_or_path", "_name_or_path", "model", "model_type", "arch",
              "architecture", "preset")
BATCH_KEYS = ("batch_size", "per_device_train_batch_size", "train_batch_size", "batch", "bs")
SEQ_KEYS = ("seq_len", "max_seq_length", "max_seq_len", "seq_length", "max_length", "block_size",
            "context_length")
PRECISION_KEYS = ("precision", "mixed_precision", "dtype", "torch_dtype", "fp16", "bf16", "amp")
DATA_KEYS = ("dataset_size", "train_size", "num_train_samples", "n_train", "num_samples", "train_samples")
DATASET_KEYS = ("dataset", "dataset_name", "data")
PARAM_KEYS = ("parameters", "num_parameters", "n_params", "param_count")


@dataclass(frozen=True)
class Signature:
    """What identifies a model: parameter-tensor count, parameter count, name; None = not known."""

    tensors: int | None
    parameters: int | None
    name: str | None
    source: str
    batch: str | None = None
    seq: str | None = None

    def text(self) -> str:
        parts = [self.name or "unnamed model"]
        if self.tensors is not None:
            parts.append(f"{self.tensors} parameter tensors")
        if self.parameters is not None:
            parts.append(f"{self.parameters:,} parameters")
        if self.batch is not None:
            parts.append(f"batch {self.batch}")
        if self.seq is not None:
            parts.append(f"sequence {self.seq}")
        return ", ".join(parts)

    @property
    def known(self) -> bool:
        return any(v is not None for v in (self.tensors, self.parameters, self.name, self.batch, self.seq))


@dataclass(frozen=True)
class WatchConfig:
    """How often watch fired: ``log`` (gradients/parameters/all), ``log_freq`` in steps."""

    log: str | None
    log_freq: int | None
    histograms_per_logging_step: int | None
    source: str
    #: True when ``histograms_per_logging_step`` is a per-profiled-step average (a table cannot say in
    #: which steps watch fired): a lower bound, so only a larger figure than the run's is a difference.
    lower_bound: bool = False

    def text(self) -> str:
        if self.log is None and self.log_freq is None:
            return "watch configuration unknown"
        parts = [f'log="{self.log}"' if self.log else "", f"log_freq={self.log_freq}" if self.log_freq else ""]
        return ", ".join(p for p in parts if p)


def _config_value(config: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = config.get(key)
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        if value not in (None, "", [], {}):
            return value
    return None


def run_signature(run: Any, stats: pd.DataFrame) -> Signature:
    """Tensors and numel from watch histograms; the name from the run's config."""
    config = getattr(run, "config", {}) or {}
    tensors = None
    if not stats.empty:
        grads = stats[stats["kind"] == "gradients"]["tensor"].nunique()
        tensors = int(grads or stats[stats["kind"] == "parameters"]["tensor"].nunique() or 0) or None
    params = signals.parameter_count(stats)
    if params is None and isinstance(_config_value(config, PARAM_KEYS), int):
        params = int(_config_value(config, PARAM_KEYS))
    name = _config_value(config, MODEL_KEYS)
    batch, seq = _config_value(config, BATCH_KEYS), _config_value(config, SEQ_KEYS)
    return Signature(tensors, params, name if isinstance(name, str) else None,
                     f"{getattr(run, 'run_id', 'run')} watch histograms and config",
                     str(batch) if batch is not None else None, str(seq) if seq is not None else None)


def run_watch(stats: pd.DataFrame, source: str) -> WatchConfig:
    if stats.empty:
        return WatchConfig(None, None, None, source)
    kinds = set(stats["kind"].unique())
    log = "all" if {"gradients", "parameters"} <= kinds else next(iter(kinds))
    per_step = int(stats.groupby("step").size().median())
    return WatchConfig(log, signals.histogram_interval(stats["step"].to_numpy()), per_step, source)


def profile_signature(document: dict[str, Any], source: str) -> Signature:
    """From our profile.json's ``model``, or the setup a capture carries (a table's ``key=value`` header)."""
    model = signals.mapping_at(document, "model")
    captured = signals.mapping_at(document, "setup")
    model = {**{k: v for k, v in captured.items() if v not in (None, "")}, **model}
    name = _config_value(model, ("name", "model", "model_name", "arch"))
    preset = model.get("preset")
    if name and preset:
        name = f"{name} ({preset} preset)"
    elif preset:
        name = f"{preset} preset"
    signature = signals.mapping_at(document, "signature")
    tensors = model.get("parameter_tensors") or signature.get("tensors")
    batch, seq = _config_value(model, BATCH_KEYS), _config_value(model, SEQ_KEYS)
    return Signature(tensors if isinstance(tensors, int) else None,
                     model.get("parameters") if isinstance(model.get("parameters"), int) else None,
                     name if isinstance(name, str) else None, source,
                     str(batch) if batch is not None else None, str(seq) if seq is not None else None)


def profile_watch(document: dict[str, Any], mode: dict[str, Any] | None, source: str) -> WatchConfig:
    """From the profiled mode of our profile.json, or from a trace's labelled watch ranges."""
    if mode is not None:
        tensors = (document.get("model") or {}).get("parameter_tensors")
        per = tensors * (2 if mode.get("log") == "all" else 1) if isinstance(tensors, int) else None
        return WatchConfig(mode.get("log"), mode.get("log_freq"), per, f"{source} mode {mode.get('mode')}")
    watch = signals.mapping_at(document, "watch")
    if watch.get("histograms_per_logging_step") is None and watch.get("histograms_per_step"):
        return WatchConfig(None, None, watch["histograms_per_step"],
                           f"{source} ({watch.get('ranges', 0)} labelled watch ranges in {watch.get('steps')} "
                           "profiled steps)", lower_bound=True)
    return WatchConfig(None, watch.get("log_freq"), watch.get("histograms_per_logging_step"),
                       f"{source} ({watch.get('ranges', 0)} labelled watch ranges)")


def signature_mismatch(run: Signature, profile: Signature, run_watch_cfg: WatchConfig,
                       profile_watch_cfg: WatchConfig) -> list[str]:
    """Every fact the two signatures both know and disagree on."""
    out = []
    if run.tensors and profile.tensors and run.tensors != profile.tensors:
        out.append(f"{profile.tensors} parameter tensors vs this run's {run.tensors}")
    if run.parameters and profile.parameters and run.parameters != profile.parameters:
        out.append(f"{profile.parameters:,} parameters vs this run's {run.parameters:,}")
    if run.name and profile.name and not _same_name(run.name, profile.name):
        out.append(f"model {profile.name} vs this run's {run.name}")
    for what, theirs, ours in (("batch size", profile.batch, run.batch), ("sequence length", profile.seq, run.seq)):
        if theirs is not None and ours is not None and theirs != ours:
            out.append(f"{what} {theirs} vs this run's {ours}")
    our_count = run_watch_cfg.histograms_per_logging_step
    their_count = profile_watch_cfg.histograms_per_logging_step
    if profile.tensors is None and our_count and their_count and (
            their_count > our_count if profile_watch_cfg.lower_bound else their_count != our_count):
        per = "per profiled step" if profile_watch_cfg.lower_bound else "per logging step"
        out.append(f"{their_count} watch histograms {per} vs this run's {our_count} per logging step")
    return out


def watch_differs(run: WatchConfig, profile: WatchConfig) -> bool:
    """Different logging frequency, or (both known) different ``log``."""
    if run.log_freq and profile.log_freq and run.log_freq != profile.log_freq:
        return True
    return bool(run.log and profile.log and run.log != profile.log)


def scaled_hook_ms(document: dict[str, Any], mode: dict[str, Any] | None, profile: WatchConfig,
                   run: WatchConfig) -> tuple[float, str] | None:
    """Hook cost per histogram (from the profile) × histograms per step (this run): an estimate."""
    if not (profile.histograms_per_logging_step and run.histograms_per_logging_step and run.log_freq):
        return None
    if mode is not None:
        hook_ms = mode.get("mean_hook_ms")
        if not isinstance(hook_ms, int | float) or hook_ms <= 0:
            return None
        per_logging_step = hook_ms * (profile.log_freq or 1)
    else:
        watch = document.get("watch") or {}
        watch_ms, logging = document.get("watch_ms"), watch.get("logging_steps")
        if not isinstance(watch_ms, int | float) or not logging:
            return None
        per_logging_step = watch_ms / logging
    per_histogram = per_logging_step / profile.histograms_per_logging_step
    firings = run.histograms_per_logging_step / run.log_freq
    value = per_histogram * firings
    how = (f"estimate: {per_histogram:.3g} ms per histogram ({profile.source}, {profile.text()}) × "
           f"{firings:.3g} histograms per step in this run ({run.text()})")
    return value, how


def _same_name(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a in b or b in a


# --- incident vs baseline -----------------------------------------------------------------------------

#: Differences that make a step-time ratio meaningless: no slowdown or hours lost across them.
BLOCKING = ("model", "parameters", "device type", "device count", "GPU model")


@dataclass(frozen=True)
class Difference:
    what: str
    before: str
    after: str

    @property
    def blocking(self) -> bool:
        return self.what in BLOCKING

    def text(self) -> str:
        return f"{self.what}: {self.before} vs {self.after}"


def run_facts(run: Any) -> dict[str, str]:
    """The facts two runs must share to compare their step times; unknown facts are left out."""
    config = getattr(run, "config", {}) or {}
    env = getattr(run, "environment", {}) or {}
    facts: dict[str, str] = {}
    name = _config_value(config, MODEL_KEYS)
    if isinstance(name, str):
        facts["model"] = name
    params = signals.parameter_count(signals.histogram_stats(run.histograms))
    if params is None and isinstance(_config_value(config, PARAM_KEYS), int):
        params = int(_config_value(config, PARAM_KEYS))
    if params is not None:
        facts["parameters"] = f"{params:,}"
    for what, keys in (("batch size", BATCH_KEYS), ("sequence length", SEQ_KEYS),
                       ("precision", PRECISION_KEYS), ("data size", DATA_KEYS),
                       ("dataset", DATASET_KEYS)):
        value = _config_value(config, keys)
        if value is not None:
            facts[what] = str(value)
    device = device_type(run)
    if device:
        facts["device type"] = device
    gpus = env.get("gpu_count")
    if device == "cuda" and gpus:
        facts["device count"] = str(gpus)
    if device == "cuda" and env.get("gpu_name"):
        facts["GPU model"] = str(env["gpu_name"])
    return facts


def device_type(run: Any) -> str | None:
    """cuda or cpu: the config's ``device`` first (a GPU host can train on the CPU), then the host."""
    config = getattr(run, "config", {}) or {}
    device = _config_value(config, ("device", "accelerator"))
    if isinstance(device, str) and device:
        return "cuda" if device.lower().startswith(("cuda", "gpu")) else device.lower().split(":")[0]
    env = getattr(run, "environment", {}) or {}
    if env.get("gpu_count") or env.get("gpu_name"):
        return "cuda"
    if env.get("cpu") or env.get("cpu_count") or str(env.get("torch") or "").endswith("+cpu"):
        return "cpu"    # a CPU-only torch build cannot have trained on a GPU
    return None


def differences(before: Any, after: Any) -> list[Difference]:
    """Facts both runs record and that differ (a fact one run lacks is not a difference)."""
    a, b = run_facts(before), run_facts(after)
    return [Difference(k, a[k], b[k]) for k in a if k in b and a[k] != b[k]]
