"""Speed rules: is the step time spent in ``wandb.watch`` work, or is the GPU starved by input?

Watch overhead fires when histograms are logged often (every ≤ 50 steps) and there is measured or
circumstantial evidence that the histogram work dominates: a profile with > 20 % of step time in
watch work, a measured slowdown of ≥ 1.25× against a baseline run, or (without measurements) a model
over 10M parameters whose GPU sits below 50 % utilisation. Measurements outrank the size heuristic,
so a small model whose profile shows the cost still fires, with higher confidence.
"""

from __future__ import annotations

from typing import Any

from incidents.diagnosis import setup, signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

FREQUENT_STEPS = 50
LARGE_MODEL = 10_000_000
LOW_UTIL = 50.0
HEAVY_SHARE = 0.20
SLOWDOWN = 1.25
IDLE_UTIL = 5.0      # % utilisation at or below which a GPU counts as idle
IDLE_MEMORY = 5.0    # % of GPU memory allocated at or below which no model sits on it


def _fix_options(subject: Subject) -> list[dict[str, Any]]:
    """The fixes to offer, each with its measured cost when the profile measured that mode."""
    facts = subject.profile
    light = facts.light_watch_mode if facts else None
    silent = " (in this profile it never reached a logging step, so its cost excludes histograms)" \
        if light and light.get("logged") is False else ""
    options = [{"code": 'wandb.watch(model, log="gradients", log_freq=100)',
                "keeps": "gradients every 100 steps; parameters never" + silent,
                "ratio_to_baseline": light.get("ratio_to_baseline") if light and light.get("log_freq", 0) >= 50
                else None,
                "source": f"{facts.source} mode {light['mode']}" if light and light.get("log_freq", 0) >= 50
                else None}]
    fast = facts.fastwatch_mode if facts else None
    options.append({"code": f'incidents.tools.fastwatch.watch(model, log="{(fast or {}).get("log") or "all"}", '
                            f'log_freq={(fast or {}).get("log_freq") or 1})',
                    "keeps": "every tensor's histograms at every logging step (HourTab's low-overhead watch)",
                    "ratio_to_baseline": fast.get("ratio_to_baseline") if fast else None,
                    "source": f"{facts.source} mode {fast['mode']}" if fast else None})
    return options


def watch_overhead(subject: Subject) -> Finding:
    """``wandb.watch`` histogram work as the cause of slow steps, with the predicted fixed step time."""
    rule = "watch_overhead"
    if subject.stats.empty:
        return not_fired(rule, "No wandb.watch histograms in this run, so watch work cannot be the cause.")
    interval = subject.histogram_interval
    log = subject.watch_log
    tensors = int(subject.stats["tensor"].nunique())
    params = signals.parameter_count(subject.stats)
    facts = subject.profile
    step_s, step_source = signals.mean_step_time(subject.run)
    share, share_source, estimated = _share(subject, facts, step_s)
    if facts and facts.watch_mode and step_s is None and not subject.watch_configs_differ:
        step_s, step_source = facts.watch_mode["mean_step_s"], f"{facts.source} mode {facts.watch_mode['mode']}"
    base_s, base_source = (signals.mean_step_time(subject.baseline)
                           if subject.baseline is not None and subject.baseline_comparable else (None, ""))
    if base_s is not None:
        base_source = f"{getattr(subject.baseline, 'run_id', 'baseline')} {base_source}"
    elif facts and facts.baseline_mode and not subject.watch_configs_differ and subject.baseline is None:
        base_s, base_source = facts.baseline_mode["mean_step_s"], f"{facts.source} mode baseline"
    slowdown = step_s / base_s if step_s and base_s else None
    if subject.watch_configs_differ and slowdown and slowdown > 1 and subject.baseline is not None:
        # The run's own timing against a comparable baseline outranks any figure carried from the profile.
        share, share_source, estimated = 1 - 1 / slowdown, f"this run's own timing: 1 − {base_source} ÷ " \
                                                           f"{subject.run_label} {step_source}", False
    util = signals.gpu_utilisation(getattr(subject.run, "system", None))
    steps = sorted(int(s) for s in subject.stats["step"].unique())
    frequent = interval is not None and interval <= FREQUENT_STEPS
    evidence: dict[str, Any] = {
        "log": log, "histogram_interval_steps": interval, "tensors": tensors, "parameters": params,
        "histogram_steps": steps[:5] + (["…", steps[-1]] if len(steps) > 5 else []),
        "watch_share": share, "watch_share_source": share_source,
        "gpu_util_mean": util, "gpu_util_source": f"{subject.run_label} system.gpu.*.gpu" if util is not None
        else "no GPU utilisation metrics in this run",
        "mean_step_s": step_s, "mean_step_source": f"{subject.run_label} {step_source}",
        "baseline_step_s": base_s, "baseline_source": base_source or None, "slowdown": slowdown,
    }
    evidence["share_is_estimate"] = estimated
    notes = [subject.profile_mismatch] if subject.profile_mismatch else []
    if subject.watch_configs_differ:
        notes.append(f"{facts.source} was taken with {subject.profile_watch.text()}, this run logs "
                     f'log="{log}", log_freq={interval}: the verdict uses this run\'s own timing'
                     + (", and the profile's hook cost is scaled (labelled an estimate)" if estimated else ""))
    blocking = [d.text() for d in subject.baseline_differences if d.blocking]
    other = [d.text() for d in subject.baseline_differences if not d.blocking]
    if blocking:
        notes.append("the baseline run is not comparable (" + "; ".join(blocking) + "): no slowdown is computed "
                     "against it")
    if other:
        notes.append("the baseline run differs (" + "; ".join(other) + "): the slowdown is less certain")
    evidence["baseline_differences"] = [d.text() for d in subject.baseline_differences]
    if notes:
        evidence["profile_note"] = "; ".join(notes) + "."
    evidence["evidence_used"] = _evidence_used(share_source, step_source, base_source, util, subject)
    if not frequent:
        return not_fired(rule, f"Watch histograms are logged every {interval or 'run'} steps (> {FREQUENT_STEPS} or "
                               "only once): too rarely to dominate step time.", **evidence)
    reasons = []
    if share is not None and share > HEAVY_SHARE:
        reasons.append(f"{'an estimated ' if estimated else ''}{share:.0%} of step time was spent in watch work")
    if slowdown is not None and slowdown >= SLOWDOWN:
        reasons.append(f"steps are {slowdown:.2f}× slower than the baseline")
    heuristic = params is not None and params > LARGE_MODEL and util is not None and util < LOW_UTIL
    if heuristic:
        reasons.append(f"a {params / 1e6:.0f}M-parameter model left the GPU at {util:.0f}% utilisation")
    if not reasons:
        return not_fired(rule, "Histograms are frequent, but no measurement shows their cost (no profile share "
                               "> 20 %, no slowdown against a baseline, GPU not idle on a large model).", **evidence)
    predicted = base_s if base_s else (step_s * (1 - share) if step_s and share is not None else None)
    evidence["predicted_step_s"] = predicted
    evidence["predicted_source"] = base_source if base_s else ("mean step × (1 − watch share)" if predicted else None)
    evidence["fixes"] = _fix_options(subject)
    freq_text = interval if log != "parameters" else f"~{interval}"
    verdict = (f'wandb.watch(log="{log}", log_freq={freq_text}) is the cause: histograms of {tensors} tensors '
               f"every {interval} step{'s' if interval != 1 else ''}; " + "; ".join(reasons) + ".")
    if predicted:
        verdict += f" Predicted step time without it: {predicted:.3g} s"
        verdict += f" (now {step_s:.3g} s)." if step_s else "."
    by_share = share is not None and share > HEAVY_SHARE
    by_slowdown = slowdown is not None and slowdown >= SLOWDOWN
    confidence = 0.9 if by_share and by_slowdown else 0.75 if by_share or by_slowdown else 0.5
    if other and by_slowdown:
        confidence -= 0.15
    if estimated and not by_slowdown:
        confidence -= 0.15
    return Finding(rule, True, "engineering", verdict, evidence, round(confidence, 2))


def _share(subject: Subject, facts: Any, step_s: float | None) -> tuple[float | None, str | None, bool]:
    """Watch share of step time: the run's own figure, the profile's when it matches, else scaled."""
    summary = getattr(subject.run, "summary", {}) or {}
    if isinstance(summary.get("repro/hook_share"), int | float):
        return float(summary["repro/hook_share"]), f"{subject.run_label} summary repro/hook_share", False
    if facts is None:
        return None, None, False
    if not subject.watch_configs_differ:
        source = f"{facts.source} (hook_share of {facts.watch_mode['mode']})" if facts.watch_mode else facts.source
        return facts.watch_share, source, False
    if subject.scaled_hook is None or not step_s:
        return None, None, False
    hook_ms, how = subject.scaled_hook
    return min(1.0, hook_ms / (step_s * 1000)), f"{how} ÷ this run's mean step", True


def _evidence_used(share_source: str | None, step_source: str, base_source: str, util: float | None,
                   subject: Subject) -> list[str]:
    used = [f"{subject.run_label} watch histograms (interval, tensors)", f"{subject.run_label} {step_source}"]
    if share_source:
        used.append(share_source)
    if base_source:
        used.append(base_source)
    if util is not None:
        used.append(f"{subject.run_label} system.gpu.*.gpu")
    return used


def _watch_work(subject: Subject) -> str | None:
    """Instrumentation that would explain an idle GPU: frequent watch histograms or a measured share."""
    interval = subject.histogram_interval
    if interval is not None and interval <= FREQUENT_STEPS:
        return f"watch histograms every {interval} step{'s' if interval != 1 else ''}"
    share = subject.profile.watch_share if subject.profile else None
    summary = getattr(subject.run, "summary", {}) or {}
    if share is None and isinstance(summary.get("repro/hook_share"), int | float):
        share = float(summary["repro/hook_share"])
    if share is not None and share > HEAVY_SHARE:
        return f"{share:.0%} of step time in watch work"
    return None


def _gpu_evidence(subject: Subject) -> dict[str, Any]:
    system = getattr(subject.run, "system", None)
    env = getattr(subject.run, "environment", {}) or {}
    return {"gpu_util_mean": signals.gpu_utilisation(system), "gpu_memory_percent": signals.gpu_memory_percent(system),
            "gpu_count": env.get("gpu_count"), "gpu_name": env.get("gpu_name"),
            "device_in_config": setup.device_type(subject.run) if (getattr(subject.run, "config", {}) or {})
            .get("device") else None,
            "parameters": setup.run_signature(subject.run, subject.stats).parameters,
            "gpu_util_source": f"{subject.run_label} system.gpu.*.gpu (steady state)",
            "gpu_memory_source": f"{subject.run_label} system.gpu.*.memoryAllocated"}


def _idle(ev: dict[str, Any]) -> bool:
    memory = ev["gpu_memory_percent"]
    return ev["gpu_util_mean"] is not None and ev["gpu_util_mean"] <= IDLE_UTIL and \
        (memory is None or memory <= IDLE_MEMORY)


def model_not_on_gpu(subject: Subject) -> Finding:
    """Idle GPUs with near-empty memory: the model trained on the CPU (or another device)."""
    rule = "model_not_on_gpu"
    ev = _gpu_evidence(subject)
    if ev["gpu_util_mean"] is None:
        return not_fired(rule, "Not checked: this run has no GPU utilisation metrics (CPU host, or system "
                               "metrics not exported).", **ev)
    if not _idle(ev):
        return not_fired(rule, f"The GPU was in use ({ev['gpu_util_mean']:.0f}% utilisation"
                               + (f", {ev['gpu_memory_percent']:.0f}% memory allocated" if ev["gpu_memory_percent"]
                                  is not None else "") + ").", **ev)
    gpus = f"{ev['gpu_count']} GPU{'s' if (ev['gpu_count'] or 1) != 1 else ''}" if ev["gpu_count"] else "the GPU"
    memory = (f" and {ev['gpu_memory_percent']:.1f}% of GPU memory allocated" if ev["gpu_memory_percent"] is not None
              else " (GPU memory not recorded)")
    told = " The run's config says device=cpu." if ev["device_in_config"] == "cpu" else ""
    ev["evidence_used"] = [ev["gpu_util_source"]] + ([ev["gpu_memory_source"]] if ev["gpu_memory_percent"]
                                                      is not None else [])
    return Finding(rule, True, "engineering",
                   f"The model is not on the GPU: {gpus} sat idle ({ev['gpu_util_mean']:.1f}% utilisation{memory}), "
                   f"so training ran on the CPU.{told} Move the model and batches to the device "
                   "(model.to('cuda'), tensors .to('cuda')) or check the launcher's device setting.",
                   ev, 0.85 if ev["gpu_memory_percent"] is not None else 0.6)


def input_bound(subject: Subject) -> Finding:
    """A GPU in use but under-fed, with no instrumentation to blame, points at the data pipeline."""
    rule = "input_bound"
    ev = _gpu_evidence(subject)
    util = ev["gpu_util_mean"]
    ev["histogram_interval_steps"] = subject.histogram_interval
    if util is None:
        return not_fired(rule, "Not checked: this run has no GPU utilisation metrics (CPU run, or system "
                               "metrics not exported).", **ev)
    if util >= LOW_UTIL:
        return not_fired(rule, f"GPU utilisation averaged {util:.0f}% (≥ {LOW_UTIL:.0f}%): not starved.", **ev)
    if _idle(ev):
        return not_fired(rule, "Not applicable: the GPU was idle with near-empty memory, so the model was not on "
                               "it (see model not on GPU); an input pipeline cannot starve an unused device.", **ev)
    work = _watch_work(subject)
    if work:
        return not_fired(rule, f"GPU utilisation averaged {util:.0f}%, but instrumentation explains it ({work}; "
                               "see watch overhead).", **ev)
    if ev["parameters"] is not None and ev["parameters"] < LARGE_MODEL:
        return not_fired(rule, f"GPU utilisation averaged {util:.0f}%, but the model is small "
                               f"({ev['parameters']:,} parameters): see GPU under-used.", **ev)
    ev["evidence_used"] = [ev["gpu_util_source"]] + ([ev["gpu_memory_source"]] if ev["gpu_memory_percent"]
                                                      is not None else []) + \
        [f"{subject.run_label} watch histograms (none frequent)", "attached profile (no watch share)"
         if subject.profile else "no profile attached"]
    in_use = f"{ev['gpu_memory_percent']:.0f}% memory allocated" if ev["gpu_memory_percent"] is not None \
        else "GPU memory not recorded"
    confidence = (0.7 if util < 25 else 0.55) if ev["gpu_memory_percent"] is not None else 0.45
    return Finding(rule, True, "engineering",
                   f"GPU utilisation averaged {util:.0f}% with the model on the GPU ({in_use}) and no watch or "
                   "other instrumentation work to account for it: the input pipeline (data loading, decoding, "
                   "host-side preprocessing, host-to-device copies) is likely starving the GPU.", ev, confidence)


def gpu_underused(subject: Subject) -> Finding:
    """A small model on a big GPU leaves it partly idle: a sizing question, not a defect."""
    rule = "gpu_underused"
    ev = _gpu_evidence(subject)
    util = ev["gpu_util_mean"]
    if util is None:
        return not_fired(rule, "Not checked: this run has no GPU utilisation metrics.", **ev)
    if util >= LOW_UTIL or _idle(ev):
        return not_fired(rule, f"GPU utilisation averaged {util:.0f}%: "
                               + ("not under-used." if util >= LOW_UTIL else "idle, not under-used (see model "
                                                                             "not on GPU)."), **ev)
    if ev["parameters"] is None or ev["parameters"] >= LARGE_MODEL:
        return not_fired(rule, "Not applicable: the model's size is unknown or large "
                               "(see input bound).", **ev)
    ev["evidence_used"] = [ev["gpu_util_source"], f"{subject.run_label} parameter count (watch histograms or config)"]
    device = f" {ev['gpu_name']}" if ev["gpu_name"] else ""
    return Finding(rule, True, "engineering",
                   f"GPU under-used (model too small for the device?): {util:.0f}% utilisation for a "
                   f"{ev['parameters']:,}-parameter model on{device or ' the GPU'}. Larger batches, several runs "
                   "per GPU or a smaller device would use it better.", ev, 0.3)
