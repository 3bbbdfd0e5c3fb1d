"""The watch rule: what a watch call will cost the run, judged with the diagnosis's own thresholds.

Histograms every ≤ 50 steps on a model over 10M parameters (``incidents.diagnosis.overhead``) is an
error, as is any predicted cost of 0.05 s per step or more. A value the file does not determine is
never replaced by a library default: the finding says what is unknown and predicts the range of
what the plausible values would cost, and takes the severity of the worst of them. A prediction uses
a calibration of the script's device only: a GPU script with a CPU-only calibration gets no hours.
"""

from __future__ import annotations

from typing import Any

from incidents.diagnosis.overhead import FREQUENT_STEPS, LARGE_MODEL
from incidents.tools.audit.cost import Calibration, predict
from incidents.tools.audit.models import ModelSize
from incidents.tools.audit.resolve import Traced, Unknown, Value, short
from incidents.tools.audit.script import ScriptFacts, WatchCall

COSTLY_STEP_S = 0.05
KINDS = ("gradients", "parameters", "all")
#: The log_freq range an unresolved value is predicted over: every step to wandb's default.
FREQ_RANGE = (1, 1000)
FIX_CALL = 'log="gradients", log_freq=100'
FIX_TEXT = ("log gradients every 100 steps (or use incidents.tools.fastwatch.watch for every tensor at a fraction of "
            "the cost)")
SEVERITIES = ("info", "warn", "error")


def training_device(facts: ScriptFacts) -> str:
    """cuda when the script uses CUDA and moves its model there (a model never moved trains on the CPU)."""
    moved = not facts.model_names or any(name in facts.moved for name in facts.model_names)
    return "cuda" if facts.uses_cuda and moved else "cpu"


def _options(log: Value, freq: Value) -> tuple[list[str], list[int]]:
    logs = [log.value] if isinstance(log, Traced) else [c for c in log.candidates if c in KINDS] or list(KINDS)
    freqs = [freq.value] if isinstance(freq, Traced) else \
        sorted({c for c in freq.candidates if isinstance(c, int) and not isinstance(c, bool) and c >= 1}) \
        or list(FREQ_RANGE)
    return logs, freqs


def _label(api: str, log: Value, freq: Value) -> str:
    name = "WandbLogger.watch" if api.startswith("WandbLogger.watch") or "Lightning's WandbLogger" in api \
        else "Trainer → wandb.watch" if "Trainer" in api else "wandb.watch"
    log_text = f'"{log.value}"' if isinstance(log, Traced) and isinstance(log.value, str) else \
        short(log.value) if isinstance(log, Traced) else "?"
    freq_text = short(freq.value) if isinstance(freq, Traced) else "?"
    # The Trainer passes log_freq itself: say where the figure comes from where it is shown.
    origin = ""
    if name.startswith("Trainer") and isinstance(freq, Traced) and freq.via.startswith("max("):
        rule = f"max(100, logging_steps={freq.value}, TrainingArguments' default)" if "default logging_steps" in \
            freq.via else freq.via.split(":")[0]
        origin = f" = {rule}, from the Trainer's logging steps"
    return f"{name}(log={log_text}, log_freq={freq_text}{origin})"


def _severity(freq: int, model: ModelSize | None, per_step: float | None) -> str:
    if freq > FREQUENT_STEPS:
        return "info"
    if model is None:
        return "warn"
    if model.parameters > LARGE_MODEL or (per_step is not None and per_step >= COSTLY_STEP_S):
        return "error"
    return "warn"


def _evidence(call: WatchCall, model: ModelSize | None) -> dict[str, Any]:
    def part(value: Value) -> tuple[Any, str]:
        return (value.value, value.via) if isinstance(value, Traced) else (None, f"unresolved: {value.reason}")

    log, log_via = part(call.log)
    freq, freq_via = part(call.log_freq)
    evidence: dict[str, Any] = {"call": call.source, "api": call.api, "log": log, "log_via": log_via,
                                "log_freq": freq, "log_freq_via": freq_via,
                                "condition": {"state": call.condition.state, "notes": list(call.condition.notes)}}
    if model is not None:
        evidence["model"] = {"name": model.name, "parameters": model.parameters, "tensors": model.tensors,
                             "source": model.source}
    elif call.size_note:
        evidence["model_note"] = call.size_note
    return evidence


def judge_watch(facts: ScriptFacts, call: WatchCall, script_model: ModelSize | None, calibration: Calibration,
                run_steps: int) -> dict[str, Any]:
    """The finding's fields (severity, message, evidence, prediction, fix) for one watch call."""
    model = call.size or script_model
    evidence = _evidence(call, model)
    label = _label(call.api, call.log, call.log_freq)
    device = training_device(facts)
    if isinstance(call.log, Traced) and call.log.value not in KINDS:
        why = "" if call.log.certain else f" ({call.log.via})"
        return {"severity": "info", "message": f"{label}: logs no histograms{why}", "evidence": evidence}
    if isinstance(call.log_freq, Traced) and (not isinstance(call.log_freq.value, int) or call.log_freq.value < 1):
        return {"severity": "warn", "message": f"{label}: log_freq={call.log_freq.value!r} is not a step count",
                "evidence": evidence, "fix": True}
    logs, freqs = _options(call.log, call.log_freq)
    unavailable = None
    if model is not None and device not in calibration.devices():
        unavailable = (f"cost not predicted: the script trains on {device} and the calibration has no {device} figures "
                       f"(the CPU figures do not apply to a GPU run); run `hourtab repro --calibrate` on the "
                       f"{device} machine")
    costs = []
    for log in logs:
        for freq in freqs:
            p = predict(calibration, log, freq, model.parameters, model.tensors, device, run_steps) \
                if model is not None and unavailable is None else None
            costs.append((log, freq, p))
    severity = max((_severity(f, model, p.per_step_s if p else None) for _, f, p in costs), key=SEVERITIES.index)
    resolved = isinstance(call.log, Traced) and isinstance(call.log_freq, Traced)
    prediction = _prediction(costs, resolved, calibration, run_steps)
    if unavailable:
        evidence["prediction_unavailable"] = unavailable
    size = (f"{model.name} ({model.parameters / 1e6:.1f}M parameters, {model.tensors or '?'} tensors)"
            if model is not None else None)
    if resolved:
        message = _resolved_message(label, freqs[0], size, prediction, unavailable, run_steps)
    else:
        unknown = "; ".join(f"{name} could not be resolved ({v.reason})" for name, v in
                            (("log", call.log), ("log_freq", call.log_freq)) if isinstance(v, Unknown))
        message = f"{label}: {unknown}; " + _range_message(logs, freqs, size, prediction, unavailable, run_steps)
    return {"severity": severity, "message": message, "evidence": evidence, "prediction": prediction,
            "fix": severity != "info" or not resolved}


def _prediction(costs: list, resolved: bool, calibration: Calibration, run_steps: int) -> dict[str, Any] | None:
    known = [(log, freq, p) for log, freq, p in costs if p is not None]
    if not known:
        return None
    if resolved:
        return {**known[0][2].to_dict(), "calibration": calibration.origin}
    low = min(known, key=lambda c: c[2].per_step_s)
    high = max(known, key=lambda c: c[2].per_step_s)
    return {"device": high[2].device, "range": True, "run_steps": run_steps,
            "min_per_step_s": low[2].per_step_s, "max_per_step_s": high[2].per_step_s,
            "min_run_s": low[2].run_s, "max_run_s": high[2].run_s,
            "min_at": {"log": low[0], "log_freq": low[1]}, "max_at": {"log": high[0], "log_freq": high[1]},
            "calibration": calibration.origin}


def _resolved_message(label: str, freq: int, size: str | None, prediction: dict | None, unavailable: str | None,
                      run_steps: int) -> str:
    if freq > FREQUENT_STEPS:
        return f"{label}: histograms every {freq} steps, too rarely to matter"
    if size is None:
        return (f"{label} logs histograms of every tensor every {freq} step(s); the model's size is unknown, so the "
                "cost cannot be predicted (pass --params)")
    if prediction is None:
        return f"{label} on {size}: histograms of every tensor every {freq} step(s); {(unavailable or '').split(':')[0]}"
    return (f"{label} on {size}: predicted +{prediction['per_step_s']:.3g} s per step, "
            f"+{prediction['run_s'] / 3600:.2f} h over {run_steps:,} steps")


def _range_message(logs: list[str], freqs: list[int], size: str | None, prediction: dict | None,
                   unavailable: str | None, run_steps: int) -> str:
    over = f"log {' or '.join(logs)} and log_freq " + (f"{freqs[0]}–{freqs[-1]}" if len(freqs) > 1 else str(freqs[0]))
    if size is None:
        return f"over {over} the cost depends on the model, whose size is unknown (pass --params)"
    if prediction is None:
        return f"on {size} over {over}: {(unavailable or '').split(':')[0]}"
    return (f"on {size}, predicted +{prediction['min_per_step_s']:.3g} to +{prediction['max_per_step_s']:.3g} s per "
            f"step (+{prediction['min_run_s'] / 3600:.2f} to +{prediction['max_run_s'] / 3600:.2f} h over "
            f"{run_steps:,} steps) over {over}")
