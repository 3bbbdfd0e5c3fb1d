"""The research-question rule: training is technically clean but the loss does not move.

This is the second class of the two-class method: when no engineering rule fires and the loss sits
near its starting value, the likely answer is about the data or the task (labels that carry no
signal, a target the model cannot express), not about the code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from incidents.diagnosis import signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

MIN_POINTS = 50
STUCK_DROP = 0.10  # less than a 10 % drop from the starting loss counts as "stuck"


def clean_but_stuck(subject: Subject, engineering_fired: list[str]) -> Finding:
    """Fires only when no engineering rule did; the loss's start and end are the evidence."""
    rule = "clean_but_stuck"
    history = getattr(subject.run, "history", None)
    column = signals.loss_column(history)
    if column is None:
        return not_fired(rule, "Not checked: no loss metric in the run's history.")
    loss = pd.to_numeric(history[column], errors="coerce").dropna()
    loss = loss[np.isfinite(loss.to_numpy(dtype="float64"))]
    if len(loss) < MIN_POINTS:
        return not_fired(rule, f"Not checked: {len(loss)} loss points (< {MIN_POINTS}) are too few to judge "
                               "progress.", metric=column, points=int(len(loss)))
    head = max(3, len(loss) // 20)
    tail = max(5, len(loss) // 5)
    start, end = float(loss.iloc[:head].median()), float(loss.iloc[-tail:].median())
    drop = (start - end) / abs(start) if start else 0.0
    evidence = {"metric": column, "start": start, "end": end, "relative_drop": round(drop, 4),
                "steps": [int(loss.index[0]), int(loss.index[-1])],
                "source": f"{subject.run_label} history {column} (median of first {head} and last {tail} points)",
                "engineering_rules_fired": engineering_fired,
                "instrumented": not subject.stats.empty}
    if engineering_fired:
        return not_fired(rule, "Not applicable: an engineering defect was found first ("
                               f"{', '.join(engineering_fired)}).", **evidence)
    if drop >= STUCK_DROP:
        return not_fired(rule, f"The loss fell {drop:.0%} ({start:.3g} → {end:.3g}): training makes progress.",
                         **evidence)
    clean = "gradient histograms are clean" if not subject.stats.empty else \
        "no engineering defect found (no watch histograms to confirm the gradients)"
    return Finding(rule, True, "research",
                   f"Likely a research question, not a bug: {clean}, yet {column} stayed near its starting "
                   f"value ({start:.3g} → {end:.3g}, {drop:+.1%}) over steps {evidence['steps'][0]}–"
                   f"{evidence['steps'][1]}. Check that the labels carry signal (shuffled or random labels?), "
                   "the task's difficulty, and the learning-rate range.",
                   evidence, 0.75 if not subject.stats.empty else 0.5)
