"""The research-question rule: training is technically clean but the loss does not move.

This is the second class of the two-class method: when no engineering rule fires and the loss sits
near its starting value, the likely answer is about the data or the task (labels that carry no
signal, a target the model cannot express), not about the code.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from incidents.diagnosis import signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

MIN_POINTS = 50
#: A change smaller than this share of the metric's scale (its range, or its size) counts as "not moving".
STUCK_SHARE = 0.10
#: …and so does a change within this many standard errors of the noise.
NOISE_Z = 3.0
#: Metric names of reinforcement learning, where "the loss should fall" does not hold.
RL_WORDS = re.compile(r"reward|return|policy|value[_ /.-]?loss|entropy|episode|advantage|kl[_ /.-]?div|q[_ ]?loss",
                      re.IGNORECASE)


def rl_metrics(history: pd.DataFrame) -> list[str]:
    return sorted(str(c) for c in history.columns if not str(c).startswith("_") and RL_WORDS.search(str(c)))


def movement(values: pd.Series) -> dict[str, float]:
    """Start and end (medians of the first and last stretch), the change, and the scale it is judged by.

    The scale is the larger of the metric's robust range (5th–95th percentile) and its size, so a
    loss near zero or a negative loss is judged by how far it moved, not by a ratio to a tiny value.
    The noise is estimated from step-to-step differences (robust to a trend).
    """
    arr = values.to_numpy(dtype="float64")
    head, tail = max(3, len(arr) // 20), max(5, len(arr) // 5)
    start, end = float(np.median(arr[:head])), float(np.median(arr[-tail:]))
    spread = float(np.percentile(arr, 95) - np.percentile(arr, 5))
    diffs = np.diff(arr)
    noise = float(1.4826 * np.median(np.abs(diffs - np.median(diffs))) / np.sqrt(2)) if diffs.size else 0.0
    stderr = 1.2533 * noise * float(np.sqrt(1 / head + 1 / tail))
    return {"start": start, "end": end, "change": end - start, "spread": spread, "noise": noise,
            "stderr": stderr, "scale": max(spread, abs(start)), "head": head, "tail": tail}


def clean_but_stuck(subject: Subject, engineering_fired: list[str]) -> Finding:
    """Fires only when no engineering rule did and the loss did not move beyond its noise and scale."""
    rule = "clean_but_stuck"
    history = getattr(subject.run, "history", None)
    column = signals.loss_column(history)
    rl = rl_metrics(history) if history is not None else []
    if rl:
        return not_fired(rule, "Not applied: this is a reinforcement-learning run (" + ", ".join(rl[:4]) +
                               "); policy and value losses and entropy need not fall, so the supervised "
                               "\"loss should fall\" rule and its label advice do not apply.", rl_metrics=rl)
    if column is None:
        return not_fired(rule, "Not checked: no loss metric in the run's history.")
    loss = pd.to_numeric(history[column], errors="coerce").dropna()
    loss = loss[np.isfinite(loss.to_numpy(dtype="float64"))]
    if len(loss) < MIN_POINTS:
        return not_fired(rule, f"Not checked: {len(loss)} loss points (< {MIN_POINTS}) are too few to judge "
                               "progress.", metric=column, points=int(len(loss)))
    m = movement(loss)
    start, end, change = m["start"], m["end"], m["change"]
    threshold = max(STUCK_SHARE * m["scale"], NOISE_Z * m["stderr"])
    steps = [int(loss.index[0]), int(loss.index[-1])]
    evidence = {"metric": column, "start": start, "end": end, "change": change, "range": m["spread"],
                # Kept for the JSON shape; the verdict is judged on change against range and noise instead.
                "relative_drop": round((start - end) / abs(start), 4) if start else None,
                "noise": m["noise"], "threshold": threshold, "steps": steps,
                "source": f"{subject.run_label} history {column} (median of first {m['head']} and last "
                          f"{m['tail']} points; range and noise over all {len(loss)})",
                "engineering_rules_fired": engineering_fired, "instrumented": not subject.stats.empty}
    if engineering_fired:
        return not_fired(rule, "Not applicable: an engineering defect was found first ("
                               f"{', '.join(engineering_fired)}).", **evidence)
    moved = f"{start:.3g} → {end:.3g}, a change of {change:+.3g} against a range of {m['spread']:.3g}"
    if change <= -threshold:
        return not_fired(rule, f"The loss fell ({moved}): training makes progress.", **evidence)
    if change >= threshold:
        return not_fired(rule, f"The loss rose ({moved}): training diverges rather than stalls, which is not "
                               "the stuck pattern.", **evidence)
    clean = "gradient histograms are clean" if not subject.stats.empty else \
        "no engineering defect found (no watch histograms to confirm the gradients)"
    return Finding(rule, True, "research",
                   f"Likely a research question, not a bug: {clean}, yet {column} stayed near its starting "
                   f"value ({moved}; a move under {threshold:.3g} counts as none) over steps {steps[0]}–"
                   f"{steps[1]}. Check that the labels carry signal (shuffled or random labels?), the task's "
                   "difficulty, and the learning-rate range.",
                   evidence, 0.75 if not subject.stats.empty else 0.5)
