"""The speed rule for instrumentation: is the step time spent in ``wandb.watch`` work?

Watch overhead fires when histograms are logged often (every ≤ 50 steps) and there is measured or
circumstantial evidence that the histogram work dominates: a profile with > 20 % of step time in
watch work, a measured slowdown of ≥ 1.25× against a baseline run, or (without measurements) a model
over 10M parameters whose GPU sits below 50 % utilisation over enough samples. Measurements outrank
the size heuristic, so a small model whose profile shows the cost still fires, with higher confidence.
Step times are medians, and the slowdown is the report's one primary comparison: the incident's
median step over the baseline's. The GPU rules live in ``gpu.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from incidents.diagnosis import signals, units
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

FREQUENT_STEPS = 50
LARGE_MODEL = 10_000_000
LOW_UTIL = 50.0
HEAVY_SHARE = 0.20
SLOWDOWN = 1.25
#: An estimated share is capped here (a calibration from a slower machine can predict more than the
#: whole step); a capped share is a lower bound, so no step time is predicted from it.
MAX_SHARE = 0.9


def _fix_options(subject: Subject) -> list[dict[str, Any]]:
    """The fixes to offer, each with its measured cost when the profile measured that mode."""
    facts = subject.profile
    light = facts.light_watch_mode if facts else None
    silent = " (in this profile it never reached a logging step, so its cost excludes histograms)" \
        if light and light.get("logged") is False else ""
    measured = light if facts and light and light.get("log_freq", 0) >= 50 else None
    options = [{"code": 'wandb.watch(model, log="gradients", log_freq=100)',
                "keeps": "gradients every 100 steps; parameters never" + silent,
                "ratio_to_baseline": measured.get("ratio_to_baseline") if measured else None,
                "source": f"{facts.source} mode {measured['mode']}" if facts and measured else None}]
    fast = facts.fastwatch_mode if facts else None
    options.append({"code": f'incidents.tools.fastwatch.watch(model, log="{(fast or {}).get("log") or "all"}", '
                            f'log_freq={(fast or {}).get("log_freq") or 1})',
                    "keeps": "every tensor's histograms at every logging step (HourTab's low-overhead watch)",
                    "ratio_to_baseline": fast.get("ratio_to_baseline") if fast else None,
                    "source": f"{facts.source} mode {fast['mode']}" if facts and fast else None})
    return options


@dataclass(frozen=True)
class _Timing:
    """The step-time figures the verdict weighs, each with where it came from."""

    step_s: float | None
    step_source: str
    share: float | None
    share_source: str | None
    estimated: bool
    base_s: float | None
    base_source: str

    @property
    def slowdown(self) -> float | None:
        return self.step_s / self.base_s if self.step_s and self.base_s else None


def _timing(subject: Subject, facts: signals.ProfileFacts | None) -> _Timing:
    """The run's step time, the watch share, and the baseline's step time, each from the best source."""
    step_s, step_source = signals.median_step_time(subject.run)
    share, share_source, estimated = _share(subject, facts, step_s)
    if facts and facts.watch_mode and step_s is None and not subject.watch_configs_differ:
        step_s, step_source = _mode_step(facts.watch_mode), f"{facts.source} mode {facts.watch_mode['mode']}"
    base_s, base_source = (signals.median_step_time(subject.baseline)
                           if subject.baseline is not None and subject.baseline_comparable else (None, ""))
    if base_s is not None:
        base_source = f"{getattr(subject.baseline, 'run_id', 'baseline')} {base_source}"
    elif facts and facts.baseline_mode and not subject.watch_configs_differ and subject.baseline is None:
        base_s, base_source = _mode_step(facts.baseline_mode), f"{facts.source} mode baseline"
    timing = _Timing(step_s, step_source, share, share_source, estimated, base_s, base_source)
    slowdown = timing.slowdown
    if subject.watch_configs_differ and slowdown and slowdown > 1 and subject.baseline is not None:
        # The run's own timing against a comparable baseline outranks any figure carried from the profile.
        return replace(timing, share=1 - 1 / slowdown, estimated=False,
                       share_source=f"this run's own timing: 1 − {base_source} ÷ {subject.run_label} {step_source}")
    return timing


def _gpu_util(subject: Subject) -> tuple[float | None, int]:
    util, gpu_samples = signals.run_gpu(subject.run)
    if gpu_samples < signals.MIN_GPU_SAMPLES:
        util = None     # too few samples to say anything about utilisation
    return util, gpu_samples


def _evidence(subject: Subject, timing: _Timing, util: float | None, gpu_samples: int) -> dict[str, Any]:
    """The finding's evidence: what was logged and every figure the verdict weighs."""
    steps = sorted(int(s) for s in subject.stats["step"].unique())
    return {
        "log": subject.watch_log, "histogram_interval_steps": subject.histogram_interval,
        "tensors": int(subject.stats["tensor"].nunique()), "parameters": signals.parameter_count(subject.stats),
        "histogram_steps": steps[:5] + (["…", steps[-1]] if len(steps) > 5 else []),
        "watch_share": timing.share, "watch_share_source": timing.share_source,
        "gpu_util_mean": util, "gpu_samples": gpu_samples,
        "gpu_util_source": f"{subject.run_label} system.gpu.*.gpu ({gpu_samples} steady-state samples)"
        if util is not None else "no GPU utilisation figure (no GPU metrics, or fewer than "
                                 f"{signals.MIN_GPU_SAMPLES} steady-state samples)",
        # ``mean_step_s`` keeps its name in the JSON; it holds the median step time.
        "mean_step_s": timing.step_s, "median_step_s": timing.step_s,
        "mean_step_source": f"{subject.run_label} {timing.step_source}",
        "baseline_step_s": timing.base_s, "baseline_source": timing.base_source or None,
        "slowdown": timing.slowdown, "share_is_estimate": timing.estimated,
    }


def _profile_notes(subject: Subject, estimated: bool) -> list[str]:
    """Why the profile or the baseline is read with care: another setup, another watch, other runs."""
    notes = [subject.profile_mismatch] if subject.profile_mismatch else []
    if subject.profile is not None and subject.profile_watch is not None:
        notes.append(f"{subject.profile.source} was taken with {subject.profile_watch.text()}, this run logs "
                     f'log="{subject.watch_log}", log_freq={subject.histogram_interval}: the verdict uses this '
                     "run's own timing"
                     + (", and the profile's hook cost is scaled (labelled an estimate)" if estimated else ""))
    blocking = [d.text() for d in subject.baseline_differences if d.blocking]
    other = [d.text() for d in subject.baseline_differences if not d.blocking]
    if blocking:
        notes.append("the baseline run is not comparable (" + "; ".join(blocking) + "): no slowdown is computed "
                     "against it")
    if other:
        notes.append("the baseline run differs (" + "; ".join(other) + "): the slowdown is less certain")
    return notes


def _reasons(timing: _Timing, capped: bool, params: int | None, util: float | None) -> list[str]:
    """What measurement (or, without one, the size heuristic) shows the histograms' cost."""
    share, slowdown = timing.share, timing.slowdown
    reasons = []
    if share is not None and share > HEAVY_SHARE:
        amount = f"at least {units.share(share)}" if capped else units.share(share)
        reasons.append(f"{'an estimated ' if timing.estimated else ''}{amount} of step time was spent in watch work")
    if slowdown is not None and slowdown >= SLOWDOWN:
        reasons.append(f"steps are {slowdown:.2f}× slower than the baseline")
    if params is not None and params > LARGE_MODEL and util is not None and util < LOW_UTIL:
        reasons.append(f"a {params / 1e6:.0f}M-parameter model left the GPU at {units.percent(util)} utilisation")
    return reasons


def _prediction(subject: Subject, timing: _Timing, capped: bool) -> tuple[float | None, float | None, str | None]:
    """The step time without watch work (the baseline's, else the mean step less the share), the mean
    step it is compared with, and how it was reached."""
    # A share is of the whole time, so it is applied to the mean step (a median step of a run logging
    # every 10 steps is a step without histograms, and would make the prediction too optimistic).
    mean_s, _ = signals.mean_step_time(subject.run)
    mean_s = mean_s or timing.step_s
    share = timing.share
    if timing.base_s:
        return timing.base_s, mean_s, timing.base_source
    predicted = mean_s * (1 - share) if mean_s and share is not None and not capped else None
    if predicted:
        how = ("estimate: mean step × (1 − estimated watch share)" if timing.estimated
               else "mean step × (1 − watch share)")
        return predicted, mean_s, how
    return None, mean_s, "not predicted: the estimated share is a cap, not a measurement" if capped else None


def _verdict(subject: Subject, timing: _Timing, reasons: list[str], predicted: float | None,
             mean_s: float | None, capped: bool) -> str:
    log, interval = subject.watch_log, subject.histogram_interval
    tensors = int(subject.stats["tensor"].nunique())
    freq_text = interval if log != "parameters" else f"~{interval}"
    verdict = (f'wandb.watch(log="{log}", log_freq={freq_text}) is the cause: histograms of {tensors} tensors '
               f"every {interval} step{'s' if interval != 1 else ''}; " + "; ".join(reasons) + ".")
    if predicted and timing.base_s:
        verdict += f" Predicted step time without it: {units.step_time(predicted)}, the baseline's median"
        verdict += f" (now {units.step_time(timing.step_s)})." if timing.step_s else "."
    elif predicted:
        verdict += (f" {'Estimated' if timing.estimated else 'Predicted'} mean step time without it: "
                    f"{units.step_time(predicted)} (now {units.step_time(mean_s)}).")
    elif capped:
        verdict += " No step time without it is predicted: the estimate reached its cap."
    return verdict


def _confidence(subject: Subject, timing: _Timing) -> float:
    """Two measurements agreeing beat one; a less comparable baseline or an estimate lowers it."""
    by_share = timing.share is not None and timing.share > HEAVY_SHARE
    by_slowdown = timing.slowdown is not None and timing.slowdown >= SLOWDOWN
    confidence = 0.9 if by_share and by_slowdown else 0.75 if by_share or by_slowdown else 0.5
    if by_slowdown and any(not d.blocking for d in subject.baseline_differences):
        confidence -= 0.15
    if timing.estimated and not by_slowdown:
        confidence -= 0.15
    return round(confidence, 2)


def watch_overhead(subject: Subject) -> Finding:
    """``wandb.watch`` histogram work as the cause of slow steps, with the predicted fixed step time."""
    rule = "watch_overhead"
    if subject.stats.empty:
        return not_fired(rule, "No wandb.watch histograms in this run, so watch work cannot be the cause.")
    interval = subject.histogram_interval
    facts = subject.profile
    timing = _timing(subject, facts)
    util, gpu_samples = _gpu_util(subject)
    evidence = _evidence(subject, timing, util, gpu_samples)
    evidence["baseline_differences"] = [d.text() for d in subject.baseline_differences]
    notes = _profile_notes(subject, timing.estimated)
    if notes:
        evidence["profile_note"] = "; ".join(notes) + "."
    evidence["evidence_used"] = _evidence_used(timing.share_source, timing.step_source, timing.base_source,
                                               util, subject)
    if not (interval is not None and interval <= FREQUENT_STEPS):
        return not_fired(rule, f"Watch histograms are logged every {interval or 'run'} steps (> {FREQUENT_STEPS} or "
                               "only once): too rarely to dominate step time.", **evidence)
    capped = bool(facts and facts.share_is_estimate and timing.share is not None and timing.share >= MAX_SHARE)
    reasons = _reasons(timing, capped, evidence["parameters"], util)
    if not reasons:
        return not_fired(rule, "Histograms are frequent, but no measurement shows their cost (no profile share "
                               "> 20 %, no slowdown against a baseline, GPU not idle on a large model).", **evidence)
    predicted, mean_s, how = _prediction(subject, timing, capped)
    evidence["predicted_step_s"] = predicted
    evidence["predicted_source"] = how
    evidence["fixes"] = _fix_options(subject)
    verdict = _verdict(subject, timing, reasons, predicted, mean_s, capped)
    return Finding(rule, True, "engineering", verdict, evidence, _confidence(subject, timing))


def _mode_step(mode: dict[str, Any]) -> float:
    """A profile mode's median step (the reproducer writes it), else its mean."""
    median = mode.get("median_step_s")
    return float(median) if isinstance(median, int | float) and median > 0 else float(mode["mean_step_s"])


def _share(subject: Subject, facts: signals.ProfileFacts | None, step_s: float | None) -> tuple[float | None, str | None, bool]:
    """Watch share of step time: the run's own figure, the profile's when it matches, else scaled."""
    summary = signals.repro_summary(subject.run)
    if isinstance(summary.get("repro/hook_share"), int | float):
        return float(summary["repro/hook_share"]), f"{subject.run_label} summary repro/hook_share", False
    if facts is None:
        return None, None, False
    if not subject.watch_configs_differ:
        source = f"{facts.source} (hook_share of {facts.watch_mode['mode']})" if facts.watch_mode else facts.source
        return facts.watch_share, source, facts.share_is_estimate
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
