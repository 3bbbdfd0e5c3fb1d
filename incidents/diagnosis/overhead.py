"""Speed rules: is the step time spent in ``wandb.watch`` work, or is the GPU starved by input?

Watch overhead fires when histograms are logged often (every ≤ 50 steps) and there is measured or
circumstantial evidence that the histogram work dominates: a profile with > 20 % of step time in
watch work, a measured slowdown of ≥ 1.25× against a baseline run, or (without measurements) a model
over 10M parameters whose GPU sits below 50 % utilisation. Measurements outrank the size heuristic,
so a small model whose profile shows the cost still fires, with higher confidence.
"""

from __future__ import annotations

from typing import Any

from incidents.diagnosis import signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

FREQUENT_STEPS = 50
LARGE_MODEL = 10_000_000
LOW_UTIL = 50.0
HEAVY_SHARE = 0.20
SLOWDOWN = 1.25


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
    options.append({"code": f'incidents.fastwatch.watch(model, log="{(fast or {}).get("log") or "all"}", '
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
    share = facts.watch_share if facts else None
    share_source = f"{facts.source} (hook_share of {facts.watch_mode['mode']})" \
        if facts and facts.watch_mode else (facts.source if facts else None)
    summary = getattr(subject.run, "summary", {}) or {}
    if share is None and isinstance(summary.get("repro/hook_share"), int | float):
        share, share_source = float(summary["repro/hook_share"]), f"{subject.run_label} summary repro/hook_share"
    step_s, step_source = signals.mean_step_time(subject.run)
    if facts and facts.watch_mode and step_s is None:
        step_s, step_source = facts.watch_mode["mean_step_s"], f"{facts.source} mode {facts.watch_mode['mode']}"
    base_s, base_source = (signals.mean_step_time(subject.baseline) if subject.baseline is not None
                           else (None, ""))
    if base_s is not None:
        base_source = f"{getattr(subject.baseline, 'run_id', 'baseline')} {base_source}"
    elif facts and facts.baseline_mode:
        base_s, base_source = facts.baseline_mode["mean_step_s"], f"{facts.source} mode baseline"
    slowdown = step_s / base_s if step_s and base_s else None
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
    if subject.profile_mismatch:
        evidence["profile_note"] = subject.profile_mismatch
    if not frequent:
        return not_fired(rule, f"Watch histograms are logged every {interval or 'run'} steps (> {FREQUENT_STEPS} or "
                               "only once): too rarely to dominate step time.", **evidence)
    reasons = []
    if share is not None and share > HEAVY_SHARE:
        reasons.append(f"{share:.0%} of step time was spent in watch work")
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
    return Finding(rule, True, "engineering", verdict, evidence, confidence)


def input_bound(subject: Subject) -> Finding:
    """A GPU left idle with no watch work to blame points at the data pipeline."""
    rule = "input_bound"
    util = signals.gpu_utilisation(getattr(subject.run, "system", None))
    if util is None:
        return not_fired(rule, "Not checked: this run has no GPU utilisation metrics (CPU run, or system "
                               "metrics not exported).", gpu_util_mean=None)
    interval = subject.histogram_interval
    share = subject.profile.watch_share if subject.profile else None
    watch_work = (interval is not None and interval <= FREQUENT_STEPS) or (share is not None and share > HEAVY_SHARE)
    evidence = {"gpu_util_mean": util, "gpu_util_source": f"{subject.run_label} system.gpu.*.gpu (steady state)",
                "histogram_interval_steps": interval, "watch_share": share}
    if util >= LOW_UTIL:
        return not_fired(rule, f"GPU utilisation averaged {util:.0f}% (≥ {LOW_UTIL:.0f}%): not starved.", **evidence)
    if watch_work:
        return not_fired(rule, f"GPU utilisation averaged {util:.0f}%, but frequent watch work explains it "
                               "(see watch overhead).", **evidence)
    confidence = 0.8 if util < 25 else 0.6
    return Finding(rule, True, "engineering",
                   f"GPU utilisation averaged {util:.0f}% with no watch work to account for it: the input "
                   "pipeline (data loading, decoding, host-side preprocessing, host-to-device copies) is "
                   "likely starving the GPU.", evidence, confidence)
