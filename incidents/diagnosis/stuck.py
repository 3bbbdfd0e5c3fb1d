"""A training loss that never moved: which suspect comes first, and what would decide it.

* A loss that fell from its first values and levelled off learned, then plateaued: not stuck.
* A loss that sits at chance from its first steps (``ln K`` for the ``K`` outputs the config names),
  or at its very first value when the config names no ``K``, is first an *engineering* suspect:
  labels misaligned with inputs, a loss on the wrong tensor, a learning rate of zero, frozen
  parameters. The finding says what would decide between them.
* A loss flat well below chance from the start is the research question of the two-class method:
  the code works, the labels may carry no more signal.
* A run that ended early (interrupted, crashed, never closed) is judged on what it logged; a flat
  stretch that short is not called either way (``undetermined``), the question left open.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from incidents.diagnosis.findings import Finding, not_fired, undetermined
from incidents.diagnosis.subject import Subject

RULE = "clean_but_stuck"
#: Config keys naming how many outputs (classes, tokens) the model chooses between.
OUTPUT_KEYS = ("num_classes", "n_classes", "num_labels", "vocab_size", "n_vocab", "output_size", "num_tokens",
               "n_tokens", "output_dim")
#: A first fall of at least this share of the first loss shows the model learned before it levelled off.
FIRST_FALL = 0.10
#: A loss at or above this share of ln K is at chance.
CHANCE_SHARE = 0.85
EPOCH_COLUMNS = ("epoch", "train/epoch", "epochs", "trainer/epoch")

WOULD_DECIDE = [
    "overfit one small batch (a handful of samples, a few hundred steps): a loss that falls to about zero clears "
    "the loss function, the learning rate and the parameter updates",
    "a few inputs printed beside their labels: labels shuffled or shifted against their inputs keep a model at "
    "chance",
    "parameter and gradient histograms (wandb.watch(log='all')): parameters that never change mean frozen "
    "parameters or a zero learning rate",
    "a control run with shuffled labels: if it scores the same, the labels carry no signal (a research question)",
]


def outputs(run: Any) -> tuple[str, int] | None:
    """(config key, K) for the number of outputs the model chooses between, when the config says."""
    config = getattr(run, "config", {}) or {}
    for key in OUTPUT_KEYS:
        value = config.get(key)
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
            return key, value
    return None


def restarted(history: pd.DataFrame) -> str | None:
    """"epoch went back from 20 to 1 at step 40": several trainings logged as one run, or None."""
    for column in EPOCH_COLUMNS:
        if column not in history.columns:
            continue
        values = pd.to_numeric(history[column], errors="coerce").dropna()
        peak = values.cummax().shift(1)
        back = values[(values < 0.5 * peak) & (peak - values >= 0.5)]
        if len(back):
            step = int(back.index[0])
            return f"{column} went back from {float(peak.loc[step]):.3g} to {float(back.iloc[0]):.3g} at step {step}"
    return None


def flat(subject: Subject, column: str, loss: pd.Series, m: dict[str, float], threshold: float,
         evidence: dict[str, Any], clean: str, moved: str, note: str) -> Finding:
    """The verdict on a loss whose start and end do not differ beyond its range and noise."""
    first, end = float(loss.iloc[:3].median()), m["end"]
    if first - end >= max(FIRST_FALL * abs(first), threshold):
        return not_fired(RULE, f"{column} fell from its first values ({first:.3g}) to {end:.3g} and levelled off "
                               f"({moved}): it learned, then plateaued; not stuck." + note, first=first, **evidence)
    out = outputs(subject.run)
    chance = math.log(out[1]) if out else None
    evidence.update(first=first, chance_level=chance, outputs=list(out) if out else None)
    steps = f"steps {int(loss.index[0])}–{int(loss.index[-1])}"
    if out and chance is not None and end < CHANCE_SHARE * chance:
        return _research(subject, column, threshold, evidence, clean, moved, note, steps)
    level = (f", at chance: uniform guessing over {out[1]:,} outputs (config {out[0]}) scores ln {out[1]} = "
             f"{chance:.3g}" if out else "; the config names no number of outputs K, so the level cannot be "
             "compared with chance (ln K)")
    updating = _parameters_update(subject)
    cleared = (" The parameter histograms show every tensor changing, which clears frozen parameters and a zero "
               "learning rate.") if updating else ""
    text = (f"{column} did not move beyond its range and noise from its first values ({moved}) over {steps}{level}. "
            "A model that never leaves its starting loss is first an engineering suspect: labels misaligned with "
            "their inputs, a loss computed on the wrong tensor or target format, a learning rate of zero or far "
            f"too small, frozen parameters.{cleared}")
    evidence["would_decide"] = list(WOULD_DECIDE)
    if evidence.get("ending"):
        return undetermined(RULE, f"Not moving over the steps it logged: {text}{note} Too short a run to call.",
                            ["a run that goes on longer"] + WOULD_DECIDE, [evidence["source"]],
                            **{k: v for k, v in evidence.items() if k not in ("would_decide", "evidence_used")})
    head = "Stuck at chance from the first steps, an engineering suspect before a research question: " if out else \
        "Stuck from the first steps, an engineering suspect before a research question: "
    return Finding(RULE, True, "engineering", head + text, evidence, 0.5)


def _research(subject: Subject, column: str, threshold: float, evidence: dict[str, Any], clean: str, moved: str,
              note: str, steps: str) -> Finding:
    text = (f"Likely a research question, not a bug: {clean}, yet {column} stayed near its starting value "
            f"({moved}; a move under {threshold:.3g} counts as none) over {steps}, below chance from the start. "
            "Check that the labels carry signal (shuffled or random labels?), the task's difficulty, and the "
            "learning-rate range.")
    if evidence.get("ending"):
        return undetermined(RULE, f"Not moving over the steps it logged: {text}{note} Too short a run to call.",
                            ["a run that goes on longer"], [evidence["source"]], **evidence)
    return Finding(RULE, True, "research", text + note, evidence, 0.75 if not subject.health.empty else 0.5)


def _parameters_update(subject: Subject) -> bool:
    params = subject.health_kind("parameters")
    return not params.empty and bool((params.groupby("tensor")["signature"].nunique() > 1).all())
