"""GPU rules: is the model on the GPU at all, is it starved by its input, or too small to fill it?

Each reads GPU utilisation from at least ``MIN_GPU_SAMPLES`` steady-state samples taken while the
run trained, and states how many. A low utilisation is a symptom, not a cause: "input-bound" is
said only with positive evidence of an input pipeline that cannot keep up —

* a profile whose DataLoader ranges and host-to-device copies take ≥ ``INPUT_SHARE`` of the steps;
* a per-step wait for data that the run logs itself (``data_time``…), ≥ ``INPUT_SHARE`` of a step;
* host CPU saturated (a core, or W&B's ``cpu`` figure, at ≥ ``CPU_SATURATED`` %) while the GPU waits;
* a DataLoader configured to load on the training thread (``num_workers=0``).

Without any, the finding is *undetermined*: "GPU under-used; cause not determined", with what would
decide it. A model too small to fill the device (fewer than ``LARGE_MODEL`` parameters, under
``SMALL_MEMORY`` of GPU memory beyond the CUDA context, or steps under ``SHORT_STEP_S``) is its own
finding: often expected, not a defect.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import setup, signals, units
from incidents.diagnosis.findings import Finding, not_fired, undetermined
from incidents.diagnosis.loss_progress import rl_metrics
from incidents.diagnosis.overhead import FREQUENT_STEPS, HEAVY_SHARE
from incidents.diagnosis.subject import Subject

LOW_UTIL = 50.0
IDLE_UTIL = 5.0        # % utilisation at or below which a GPU counts as idle
IDLE_MEMORY = 5.0      # % of GPU memory allocated at or below which no model sits on it
LARGE_MODEL = 10_000_000
#: Below this many parameters the CPU is the right device: the advice is not "move it to the GPU".
CPU_SIZED = 1_000_000
INPUT_SHARE = 0.20
CPU_SATURATED = 90.0
CUDA_CONTEXT = 0.5 * 2**30    # about what the CUDA context alone holds on the device
SMALL_MEMORY = 2**30
SHORT_STEP_S = 0.005
#: Metrics a training loop logs for the time a step waited for its batch.
DATA_WAIT = re.compile(r"(^|[/_.])((data|dataload(er)?|loader|fetch|input|batch[_ ]?load)[_ .-]?(time|wait)"
                       r"|time[/_.](data|dataload(er)?|loader|fetch))([_ .-]?(s|sec|secs|ms))?$", re.IGNORECASE)
WORKER_KEYS = ("num_workers", "dataloader_num_workers", "workers", "data.num_workers", "loader.num_workers")

WOULD_DECIDE = [
    "a torch.profiler capture of a few training steps (chrome trace or key_averages table, attached as a "
    "profile): time in DataLoader ranges and host-to-device copies shows an input bottleneck, kernels back "
    "to back show none",
    "per-core CPU utilisation during training (W&B system.cpu.<i>.cpu_percent), to see whether the "
    "loader's cores are saturated while the GPU waits",
    "the time each step waits for its batch, logged per step (for example data_time)",
    "a run with more DataLoader workers (num_workers), or with the data already on the GPU: if utilisation "
    "rises, the input pipeline was the limit",
]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _gpu_evidence(subject: Subject) -> dict[str, Any]:
    """The GPU facts the three GPU rules share, computed once per subject (each rule gets a copy)."""
    if "gpu" not in subject.cache:
        subject.cache["gpu"] = _gpu_facts(subject)
    return dict(subject.cache["gpu"])


def _gpu_facts(subject: Subject) -> dict[str, Any]:
    run = subject.run
    system = run.system
    env = getattr(run, "environment", {}) or {}
    steady = signals.steady_rows(system, history=run.history)
    gpus = signals.run_gpus(run, LOW_UTIL, steady=steady)
    util, samples = signals.run_gpu(run, gpus, steady) if steady is not None else (None, 0)
    which = ",".join(str(i) for i in gpus.gpus) or "*"
    return {"gpu_util_mean": util, "gpu_samples": samples, "min_gpu_samples": signals.MIN_GPU_SAMPLES,
            "has_gpu_metrics": bool(signals.gpu_columns(system)),
            "gpu_memory_percent": signals.run_gpu_memory(run, gpus),
            "gpu_count": env.get("gpu_count"), "gpu_name": env.get("gpu_name"),
            "gpu_memory_bytes": env.get("gpu_memory_bytes"),
            "gpus": list(gpus.gpus), "gpu_attribution": gpus.how, "gpus_read": gpus.text(),
            "node_gpus": {str(i): {"util": _round(u), "memory": _round(m)} for i, (u, m) in gpus.node.items()},
            "device_in_config": setup.device_type(run) if (getattr(run, "config", {}) or {}).get("device") else None,
            "parameters": setup.run_signature(run, subject.stats).parameters,
            "gpu_util_source": f"{subject.run_label} system.gpu.{{{which}}}.gpu "
                               f"({_plural(samples, 'steady-state sample')}; {gpus.text()})",
            "gpu_memory_source": f"{subject.run_label} system.gpu.{{{which}}}.memoryAllocated"}


def _round(value: float | None) -> float | None:
    return None if value is None or value != value else round(float(value), 1)


def _not_attributed(rule: str, ev: dict[str, Any]) -> Finding | None:
    """The refusal when the node's GPUs that hold memory disagree and none is known to be the run's."""
    if ev["gpu_attribution"] != "undetermined":
        return None
    per = "; ".join(f"GPU {i}: {units.percent(v['util'])} utilisation, {units.percent(v['memory'])} memory" for i, v in
                    ev["node_gpus"].items() if int(i) in ev["gpus"] and v["util"] is not None and v["memory"] is not None)
    return undetermined(rule, f"Which of the node's GPUs this run used is not determined: {ev['gpus_read']}, and they "
                              f"disagree ({per}); the node's mean would judge other jobs' GPUs with this one.",
                        ["gpu.process.<i> keys (an SDK that sees the training process), or CUDA_VISIBLE_DEVICES / "
                         "LOCAL_RANK in the run's config or console", "nvidia-smi's process list while the run trains"],
                        [ev["gpu_util_source"]], **ev)


def _not_checked(rule: str, ev: dict[str, Any], why_no_metrics: str = "") -> Finding | None:
    """The GPU rules' common refusal: no GPU metrics at all, or too few samples to judge by."""
    if not ev["has_gpu_metrics"]:
        return not_fired(rule, f"Not checked: this run has no GPU utilisation metrics{why_no_metrics}.", **ev)
    if ev["gpu_samples"] >= signals.MIN_GPU_SAMPLES and ev["gpu_util_mean"] is not None:
        return None
    return not_fired(rule, f"Not checked: {_plural(ev['gpu_samples'], 'steady-state GPU sample')} while the run trained; a "
            f"GPU-utilisation verdict needs at least {signals.MIN_GPU_SAMPLES} (a longer run, or "
            "wandb.Settings(x_stats_sampling_interval=…) for more frequent samples).", **ev)


def _idle(ev: dict[str, Any]) -> bool:
    """Idle with near-empty memory; never a GPU found by the memory the run holds on it."""
    if ev["gpu_attribution"] in ("memory", "agree", "undetermined"):
        return False
    memory = ev["gpu_memory_percent"]
    return ev["gpu_util_mean"] is not None and ev["gpu_util_mean"] <= IDLE_UTIL and \
        (memory is None or memory <= IDLE_MEMORY)


def model_not_on_gpu(subject: Subject) -> Finding:
    """Idle GPUs with near-empty memory: the model trained on the CPU (or another device)."""
    rule = "model_not_on_gpu"
    ev = _gpu_evidence(subject)
    if (unchecked := _not_checked(rule, ev, " (CPU host, or system metrics not exported)")) is not None:
        return unchecked
    samples = _plural(ev["gpu_samples"], "sample")
    if not _idle(ev):
        return not_fired(rule, f"The GPU was in use ({units.percent(ev['gpu_util_mean'])} utilisation over {samples}"
                               + (f", {units.percent(ev['gpu_memory_percent'])} memory allocated" if ev["gpu_memory_percent"]
                                  is not None else "") + ").", **ev)
    count = len(ev["gpus"]) or ev["gpu_count"]
    gpus = f"{count} GPU{'s' if count != 1 else ''}" if count else "the GPU"
    memory = (f" and {units.percent(ev['gpu_memory_percent'])} of GPU memory allocated" if ev["gpu_memory_percent"] is not None
              else " (GPU memory not recorded)")
    told = " The run's config says device=cpu." if ev["device_in_config"] == "cpu" else ""
    ev["evidence_used"] = [ev["gpu_util_source"]] + ([ev["gpu_memory_source"]] if ev["gpu_memory_percent"]
                                                      is not None else [])
    head = (f"The model is not on the GPU: {gpus} sat idle ({units.percent(ev['gpu_util_mean'])} utilisation{memory}, "
            f"{samples}), so training ran on the CPU.{told}")
    params = ev["parameters"]
    if params is not None and params < CPU_SIZED:
        rl = rl_metrics(subject.run.history)
        bound = " A reinforcement-learning run like this one is bound by its environment steps." if rl else ""
        ev["evidence_used"].append(f"{subject.run_label} parameter count (watch histograms or config)")
        return Finding(rule, True, "engineering",
                       f"{head} For a {params:,}-parameter model the CPU is the right place: moving it to the "
                       f"GPU would not make it faster.{bound} What sits idle is the GPU host: a CPU-only host "
                       "would serve this run.", ev, 0.7)
    return Finding(rule, True, "engineering",
                   f"{head} Move the model and batches to the device (model.to('cuda'), tensors .to('cuda')) or "
                   "check the launcher's device setting.", ev, 0.85 if ev["gpu_memory_percent"] is not None else 0.6)


def _steady_mean(system: pd.DataFrame, column: str, history: pd.DataFrame | None) -> float | None:
    values = pd.to_numeric(system[column], errors="coerce")
    window = signals.training_window(history)
    if window is not None:
        values = values[(values.index >= window[0]) & (values.index <= window[1])]
    values = values.dropna()
    return float(values.mean()) if len(values) else None


def _cpu(subject: Subject) -> tuple[list[tuple[str, float]], float | None]:
    """Per-core steady means (``system.cpu.<i>.cpu_percent``) and W&B's overall ``system.cpu``."""
    system = subject.run.system
    history = subject.run.history
    if system is None or system.empty:
        return [], None
    cores = [c for c in system.columns if re.fullmatch(r"system\.cpu\.\d+\.cpu_percent", str(c))]
    per_core = [(c.split(".")[2], m) for c in cores if (m := _steady_mean(system, c, history)) is not None]
    overall = _steady_mean(system, "system.cpu", history) if "system.cpu" in system.columns else None
    return per_core, overall


def _data_wait(subject: Subject) -> tuple[str, float, float, float] | None:
    """(column, median wait s, median step s, share) for a per-step data-wait metric the run logs."""
    history = subject.run.history
    if history is None or history.empty:
        return None
    step, _ = signals.median_step_time(subject.run)
    if not step:
        return None
    for column in history.columns:
        if not DATA_WAIT.search(str(column)):
            continue
        values = pd.to_numeric(history[column], errors="coerce").dropna()
        values = values[np.isfinite(values.to_numpy(dtype="float64")) & (values >= 0)]
        if len(values) < 3:
            continue
        wait = float(values.median()) / (1000.0 if str(column).lower().endswith("ms") else 1.0)
        return str(column), wait, step, wait / step
    return None


def _workers(subject: Subject) -> tuple[str, int] | None:
    config = getattr(subject.run, "config", {}) or {}
    for key in WORKER_KEYS:
        value = config.get(key)
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        if isinstance(value, int) and not isinstance(value, bool):
            return key, value
    return None


def _input_signs(subject: Subject) -> list[tuple[str, str, float]]:
    """Positive evidence of an input pipeline that cannot keep up: (text, source, confidence)."""
    signs = []
    facts = subject.profile
    if facts is not None and facts.input_share is not None and facts.input_share >= INPUT_SHARE:
        signs.append((f"{units.share(facts.input_share)} of the profiled steps was spent fetching batches (DataLoader "
                      "ranges and host-to-device copies)", f"{facts.source} (input_share)", 0.8))
    wait = _data_wait(subject)
    if wait is not None and wait[3] >= INPUT_SHARE:
        column, seconds, step, share = wait
        signs.append((f"each step waited a median {units.step_time(seconds)} for its batch, {units.share(share)} of the "
                      f"median {step * 1000:.3g} ms step", f"{subject.run_label} history {column} (median)", 0.75))
    per_core, overall = _cpu(subject)
    busy = [(i, m) for i, m in per_core if m >= CPU_SATURATED]
    if busy:
        cores = ", ".join(f"{i} ({units.percent(m)})" for i, m in busy[:6])
        signs.append((f"CPU core{'s' if len(busy) > 1 else ''} {cores} saturated while the GPU waited",
                      f"{subject.run_label} system.cpu.<i>.cpu_percent", 0.6))
    elif overall is not None and overall >= CPU_SATURATED:
        signs.append((f"host CPU at {units.percent(overall)} while the GPU waited", f"{subject.run_label} system.cpu", 0.55))
    workers = _workers(subject)
    if workers is not None and workers[1] == 0:
        signs.append((f"the DataLoader loads every batch on the training thread ({workers[0]}=0)",
                      f"{subject.run_label} config {workers[0]}", 0.45))
    return signs


def _too_small(subject: Subject, ev: dict[str, Any]) -> list[tuple[str, str]]:
    """Why the model cannot fill the device: (reason, source) for each sign of a small workload."""
    reasons = []
    if ev["parameters"] is not None and ev["parameters"] < LARGE_MODEL:
        reasons.append((f"a {ev['parameters']:,}-parameter model",
                        f"{subject.run_label} parameter count (watch histograms or config)"))
    total, percent = ev["gpu_memory_bytes"], ev["gpu_memory_percent"]
    if isinstance(total, int | float) and total > 0 and percent is not None:
        beyond = max(0.0, total * percent / 100 - CUDA_CONTEXT)
        if beyond < SMALL_MEMORY:
            reasons.append((f"{beyond / 2**30:.2f} GiB of GPU memory in use beyond the CUDA context "
                            f"(of {total / 2**30:.0f} GiB)", ev["gpu_memory_source"]))
    step, source = signals.median_step_time(subject.run)
    if step is not None and step < SHORT_STEP_S:
        reasons.append((f"steps of {step * 1000:.2g} ms, too short to keep the GPU busy between launches",
                        f"{subject.run_label} {source}"))
    return reasons


def _watch_work(subject: Subject) -> str | None:
    """Instrumentation that would explain an idle GPU: frequent watch histograms or a measured share."""
    interval = subject.histogram_interval
    if interval is not None and interval <= FREQUENT_STEPS:
        return f"watch histograms every {interval} step{'s' if interval != 1 else ''}"
    share = subject.profile.watch_share if subject.profile else None
    summary = signals.repro_summary(subject.run)
    if share is None and isinstance(summary.get("repro/hook_share"), int | float):
        share = float(summary["repro/hook_share"])
    if share is not None and share > HEAVY_SHARE:
        return f"{units.share(share)} of step time in watch work"
    return None


def input_bound(subject: Subject) -> Finding:
    """Input-bound only with positive evidence; an under-used GPU without it is left undetermined."""
    rule = "input_bound"
    ev = _gpu_evidence(subject)
    util = ev["gpu_util_mean"]
    ev["histogram_interval_steps"] = subject.histogram_interval
    if (unchecked := _not_checked(rule, ev, " (CPU run, or system metrics not exported)")) is not None:
        return unchecked
    if (unknown := _not_attributed(rule, ev)) is not None:
        return unknown
    samples = _plural(ev["gpu_samples"], "steady-state sample")
    if util >= LOW_UTIL:
        return not_fired(rule, f"GPU utilisation averaged {units.percent(util)} over {samples} (≥ {LOW_UTIL:.0f} %): "
                               "not starved.", **ev)
    if _idle(ev):
        return not_fired(rule, "Not applicable: the GPU was idle with near-empty memory, so the model was not on "
                               "it (see model not on GPU); an input pipeline cannot starve an unused device.", **ev)
    work = _watch_work(subject)
    if work:
        return not_fired(rule, f"GPU utilisation averaged {units.percent(util)}, but instrumentation explains it ({work}; "
                               "see watch overhead).", **ev)
    signs = _input_signs(subject)
    if signs:
        ev["input_signs"] = [text for text, _, _ in signs]
        ev["evidence_used"] = [ev["gpu_util_source"]] + [source for _, source, _ in signs]
        return Finding(rule, True, "engineering",
                       f"Input-bound: GPU utilisation averaged {units.percent(util)} over {samples}, and "
                       + "; ".join(text for text, _, _ in signs) + ". The input pipeline (data loading, decoding, "
                       "host-side preprocessing, host-to-device copies) cannot keep the GPU fed: more DataLoader "
                       "workers, pinned memory and prefetching, or preprocessing done once ahead of training.",
                       ev, max(c for _, _, c in signs))
    if _too_small(subject, ev):
        return not_fired(rule, f"GPU utilisation averaged {units.percent(util)}, and the workload is small for the device "
                               "(see GPU under-used); nothing shows an input pipeline holding it back.", **ev)
    per_core, overall = _cpu(subject)
    cpu = (f"; host CPU averaged {units.percent(overall)} (system.cpu), not saturated" if overall is not None and not per_core
           else f"; no CPU core above {CPU_SATURATED:.0f} %" if per_core else "")
    workers = _workers(subject)
    used = [ev["gpu_util_source"]] + ([f"{subject.run_label} system.cpu"] if overall is not None else []) + \
        ["attached profile (no input share)" if subject.profile else "no profile attached",
         f"{subject.run_label} history (no per-step data-wait metric)", f"{subject.run_label} config (no DataLoader "
         "worker setting)" if workers is None else f"{subject.run_label} config {workers[0]}"]
    return undetermined(rule, f"GPU under-used ({units.percent(util)} utilisation over {samples}{cpu}); cause not "
                              "determined: nothing in the evidence shows an input pipeline (no profile with "
                              "data-loading time, no per-step data wait, no saturated host CPU, no loader "
                              "configuration that cannot keep up).", list(WOULD_DECIDE), used, **ev)


def gpu_underused(subject: Subject) -> Finding:
    """A model too small for the device leaves it partly idle: often expected, not a defect."""
    rule = "gpu_underused"
    ev = _gpu_evidence(subject)
    util = ev["gpu_util_mean"]
    if (unchecked := _not_checked(rule, ev)) is not None:
        return unchecked
    if (unknown := _not_attributed(rule, ev)) is not None:
        return unknown
    if util >= LOW_UTIL or _idle(ev):
        return not_fired(rule, f"GPU utilisation averaged {units.percent(util)}: "
                               + ("not under-used." if util >= LOW_UTIL else "idle, not under-used (see model "
                                                                             "not on GPU)."), **ev)
    reasons = _too_small(subject, ev)
    if not reasons:
        return not_fired(rule, "Not applicable: nothing shows the model is too small for the device (size unknown "
                               f"or ≥ {LARGE_MODEL / 1e6:.0f}M parameters, memory in use, steps not short).", **ev)
    ev["evidence_used"] = [ev["gpu_util_source"]] + [source for _, source in reasons]
    device = ev["gpu_name"] or "the GPU"
    return Finding(rule, True, "engineering",
                   f"A model this size cannot fill this GPU: {'; '.join(r for r, _ in reasons)}, at {units.percent(util)} "
                   f"utilisation over {_plural(ev['gpu_samples'], 'steady-state sample')} on {device}. Often "
                   "expected for so small a workload, not a defect; larger batches, several runs per GPU or a "
                   "smaller GPU would use it better.", ev, 0.3)
