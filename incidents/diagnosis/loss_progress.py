"""The progress rule: is the training loss moving, and if not, which suspect comes first?

It runs only when no engineering rule fired, on a supervised run's training loss (never an RL
run's, never one curve made of several trainings: an epoch counter that goes back to 1). A loss
that fell, or rose, is not stuck. A loss that did not move (its end within its range and noise of
its start) is read in ``stuck.py``: at chance from the first steps it is an engineering suspect
before a research question, and the finding says what would decide it. One more pattern:

* a loss that falls at first and then stops almost at once (within ``EARLY_SHARE`` of its points,
  at most ``EARLY_POINTS`` of them) has learned the label frequencies and nothing more, which is
  more often wiring (inputs not reaching the model, shifted targets) or the learning rate;
* a training loss that falls while a held-out metric gets worse is not "progress".

A run that ended early (interrupted, crashed, killed) is judged on what it logged, and says so.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import quality, signals, stuck
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

MIN_POINTS = 50
#: A change smaller than this share of the metric's scale (its range, or its size) counts as "not moving".
STUCK_SHARE = 0.10
#: …and so does a change within this many standard errors of the noise.
NOISE_Z = 3.0
#: "Stopped almost at once": the plateau began within this share of the logged points…
EARLY_SHARE = 0.05
#: …and within this many of them.
EARLY_POINTS = 50
#: A first fall of at least this share of the starting loss shows the loss did move before it stopped.
FIRST_FALL = 0.10
#: Metric names of reinforcement learning, where "the loss should fall" does not hold.
RL_WORDS = re.compile(r"reward|return|policy|value[_ /.-]?loss|entropy|episode|advantage|kl[_ /.-]?div|q[_ ]?loss",
                      re.IGNORECASE)


movement = signals.movement   # kept importable from here


def rl_metrics(history: pd.DataFrame) -> list[str]:
    return sorted(str(c) for c in history.columns if not str(c).startswith("_") and RL_WORDS.search(str(c)))


RULE = "clean_but_stuck"


def clean_but_stuck(subject: Subject, engineering_fired: list[str]) -> Finding:
    """Fires only when no engineering rule did and the loss did not move beyond its noise and scale."""
    judged = _loss_to_judge(subject)
    if isinstance(judged, Finding):
        return judged
    column, loss = judged
    m = signals.movement(loss)
    end, change = m["end"], m["change"]
    threshold = max(STUCK_SHARE * m["scale"], NOISE_Z * m["stderr"])
    evidence = _evidence(subject, column, loss, m, threshold, engineering_fired)
    if engineering_fired:
        return not_fired(RULE, "Not applicable: an engineering defect was found first ("
                               f"{', '.join(engineering_fired)}).", **evidence)
    moved = f"{m['start']:.3g} → {end:.3g}, a change of {change:+.3g} against a range of {m['spread']:.3g}"
    ended = signals.ending_text(subject.run)
    if ended:
        evidence["ending"] = ended
    note = f" The run {ended}: it is judged on the steps it logged." if ended else ""
    if change <= -threshold:
        progress_note = f" The run {ended}: training was still making progress over the steps it logged." \
            if ended else note
        return _fell(subject, moved, progress_note, evidence)
    if change >= threshold:
        return not_fired(RULE, f"The loss rose ({moved}): training diverges rather than stalls, which is not "
                               "the stuck pattern." + note, **evidence)
    clean = "gradient histograms are clean" if not subject.health.empty else \
        "no engineering defect found (no gradient histograms to confirm the gradients)"
    early = _stuck_from_start(subject, column, loss, threshold, moved, note, evidence)
    return early or stuck.flat(subject, column, loss, m, threshold, evidence, clean, moved, note)


def _loss_to_judge(subject: Subject) -> tuple[str, pd.Series] | Finding:
    """The run's finite loss points, or why the rule does not judge this run."""
    history = subject.run.history
    column = signals.loss_column(history)
    rl = rl_metrics(history) if history is not None else []
    if rl:
        return not_fired(RULE, "Not applied: this is a reinforcement-learning run (" + ", ".join(rl[:4]) +
                               "); policy and value losses and entropy need not fall, so the supervised "
                               "\"loss should fall\" rule and its label advice do not apply.", rl_metrics=rl)
    if column is None or history is None:
        return not_fired(RULE, "Not checked: no loss metric in the run's history.")
    loss = pd.to_numeric(history[column], errors="coerce").dropna()
    loss = loss[np.isfinite(loss.to_numpy(dtype="float64"))]
    if len(loss) < MIN_POINTS:
        return not_fired(RULE, f"Not checked: {len(loss)} loss points (< {MIN_POINTS}) are too few to judge "
                               "progress.", metric=column, points=int(len(loss)))
    restart = stuck.restarted(history)
    if restart is not None:
        return not_fired(RULE, f"Not applied: the run trained several models one after another ({restart}), so its "
                               f"{column} curve is not one training's.", metric=column, restart=restart)
    return column, loss


def _evidence(subject: Subject, column: str, loss: pd.Series, m: dict[str, Any], threshold: float,
              engineering_fired: list[str]) -> dict[str, Any]:
    start, end = m["start"], m["end"]
    return {"metric": column, "start": start, "end": end, "change": m["change"], "range": m["spread"],
            # Kept for the JSON shape; the verdict is judged on change against range and noise instead.
            "relative_drop": round((start - end) / abs(start), 4) if start else None,
            "noise": m["noise"], "threshold": threshold, "steps": [int(loss.index[0]), int(loss.index[-1])],
            "source": f"{subject.run_label} history {column} (median of first {m['head']} and last "
                      f"{m['tail']} points; range and noise over all {len(loss)})",
            "engineering_rules_fired": engineering_fired, "instrumented": not subject.stats.empty}


def _fell(subject: Subject, moved: str, note: str, evidence: dict[str, Any]) -> Finding:
    """A falling training loss is progress, unless a held-out metric got worse meanwhile."""
    worse = quality.worsened(subject.run.history)
    if not worse:
        return not_fired(RULE, f"The loss fell ({moved}): training makes progress." + note, **evidence)
    w = worse[0]
    evidence["held_out_worse"] = worse
    return not_fired(RULE, f"The training loss fell ({moved}), but {w['metric']} got worse ({w['start']:.3g} "
                           f"→ {w['end']:.3g}, {w['direction']} is better): the model does not generalise, "
                           "so this is not progress (see quality collapse and overfitting)." + note, **evidence)


def _stuck_from_start(subject: Subject, column: str, loss: pd.Series, threshold: float, moved: str, note: str,
                      evidence: dict[str, Any]) -> Finding | None:
    """A loss that fell within its first steps and then stopped: wiring, not research."""
    early = _early_plateau(loss, threshold)
    if early is None:
        return None
    first, onset = early
    end = evidence["end"]
    chance = _chance(subject.run, end)
    evidence.update(first=first, plateau_from_step=int(loss.index[onset]), plateau_from_point=onset,
                    chance_level=chance[1] if chance else None)
    return Finding(RULE, True, "engineering",
                   f"Stuck from the start, more likely wiring than a research question: {column} fell from "
                   f"{first:.3g} to {end:.3g} by step {int(loss.index[onset])} (point {onset + 1} of "
                   f"{len(loss):,} logged) and has not moved since ({moved}){chance[0] if chance else ''}. A "
                   "loss that stops this early has learned the label frequencies and nothing else: check that "
                   "the inputs reach the model (the decoder, in a sequence model), that targets are aligned "
                   "with their inputs (not shifted or mismatched), that the loss is computed on the model's "
                   "output, and the learning rate; only then whether the labels carry signal." + note,
                   evidence, 0.55)


def _early_plateau(loss: pd.Series, threshold: float) -> tuple[float, int] | None:
    """(first level, point where the plateau began) when the loss fell and then stopped almost at once."""
    values = loss.to_numpy(dtype="float64")
    n = len(values)
    first = float(values[0])     # the untrained model's loss: the fall can be over within three steps
    end = float(np.median(values[-max(5, n // 5):]))
    if first - end < max(FIRST_FALL * abs(first), threshold):
        return None
    window = max(3, min(25, n // 50))
    rolling = pd.Series(values).rolling(window, min_periods=1, center=True).median().to_numpy()
    away = np.flatnonzero(np.abs(rolling - end) > threshold)
    onset = int(away[-1]) + 1 if away.size else 0
    if onset > min(EARLY_POINTS, max(3, EARLY_SHARE * n)):
        return None
    return first, onset


def _chance(run: Any, end: float) -> tuple[str, float] | None:
    """The loss of uniform guessing, ln K, when the config names K outputs."""
    out = stuck.outputs(run)
    if out is None:
        return None
    key, value = out
    level = math.log(value)
    return (f"; uniform guessing over {value:,} outputs (config {key}) scores ln {value} = {level:.3g}, "
            f"and predicting the label frequencies scores their entropy, at most that", level)
