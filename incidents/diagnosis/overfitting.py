"""Overfitting: a held-out loss that turned and rose for good while the training loss kept falling.

Read on a held-out loss (a lower-is-better metric whose name says ``val``, ``eval``, ``test``…),
paired with the training loss of the same name (``val/loss`` with ``train/loss``,
``forget_test/x_loss`` with ``forget_train/x_loss``), else the run's training loss. It fires when:

* the held-out loss has at least :data:`MIN_POINTS` points and reached its best before its last
  stretch (the last fifth of its points, at least :data:`TAIL` of them);
* every point of that last stretch sits above the best, and their median is at least
  :data:`RISE` above it and beyond the metric's point-to-point noise (:data:`NOISE_Z` standard errors);
* the training loss fell from the turn to the end;
* and no held-out metric is still improving (one at its best in its own last stretch): a run
  still improving on some held-out measure is not overfitting yet.

The evidence is the step where the held-out loss turned, its rise, and the gap between held-out
and training loss at the turn and at the end. A modelling matter (class ``research``): keep the
checkpoint from the turn and regularise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import names, quality, signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

MIN_POINTS = 5
TAIL = 2
RISE = 0.10
NOISE_Z = 3.0


def overfitting(subject: Subject) -> Finding:
    rule = "overfitting"
    history = subject.run.history
    held = [(c, way) for c, way in quality.held_out_metrics(history) if way == "lower" and "loss" in names.metric_words(c)]
    held = [(c, way) for c, way in held if len(quality.series(history, c)) >= MIN_POINTS]
    if not held:
        return not_fired(rule, f"Not checked: no held-out loss with {MIN_POINTS} or more points (val_loss, eval/loss…).")
    improving = _still_improving(history)
    found = None
    for column, _ in sorted(held, key=lambda cw: -len(quality.series(history, cw[0]))):
        turn = _turn(quality.series(history, column))
        if turn is not None:
            found = (column, turn)
            break
    if found is None:
        return not_fired(rule, "The held-out loss did not turn and rise for good ("
                               + ", ".join(c for c, _ in held[:3]) + ").", metrics=[c for c, _ in held])
    column, turn = found
    train = _paired_train(history, column)
    if train is None:
        return not_fired(rule, f"{column} rose after step {turn['turn_step']}, but there is no training loss to "
                               "compare it with.", **turn, metric=column)
    gap = _gap(quality.series(history, train), turn)
    evidence = {**turn, **gap, "metric": column, "train_metric": train, "still_improving": improving,
                "evidence_used": [f"{subject.run_label} history {column}", f"{subject.run_label} history {train}"]}
    if gap["train_end"] >= gap["train_at_turn"]:
        return not_fired(rule, f"{column} rose after step {turn['turn_step']}, but {train} did not keep falling: "
                               "not the overfitting pattern.", **evidence)
    if improving:
        return not_fired(rule, f"{column} rose after step {turn['turn_step']}, but {improving[0]} is still improving "
                               "at the end: not overfitting yet.", **evidence)
    return Finding(rule, True, "research",
                   f"Overfitting from step {turn['turn_step']}: {column} reached its best, {turn['best']:.3g}, at step "
                   f"{turn['turn_step']} and rose to {turn['end']:.3g} by step {turn['end_step']} "
                   f"(+{turn['rise_share']:.0%}), while {train} kept falling ({gap['train_at_turn']:.3g} → "
                   f"{gap['train_end']:.3g}); the gap between them grew from {gap['gap_at_turn']:.3g} to "
                   f"{gap['gap_end']:.3g}. Keep the checkpoint from step {turn['turn_step']} (early stopping on "
                   f"{column}), and add regularisation (weight decay, dropout, augmentation) or data.",
                   evidence, 0.8)


def _turn(values: pd.Series) -> dict[str, Any] | None:
    """Where a held-out loss reached its best and how far it rose after, or None if it did not rise."""
    n = len(values)
    k = max(TAIL, n // 5)
    if n - k < 2:
        return None
    best_at = int(np.argmin(values.to_numpy()))
    if best_at >= n - k:
        return None
    best, tail = float(values.iloc[best_at]), values.iloc[-k:]
    end = float(tail.median())
    diffs = np.diff(values.to_numpy())
    noise = float(1.4826 * np.median(np.abs(diffs - np.median(diffs))) / np.sqrt(2)) if diffs.size else 0.0
    rise = end - best
    if not (tail > best).all() or rise < RISE * abs(best) or rise < NOISE_Z * noise / np.sqrt(k):
        return None
    return {"turn_step": int(values.index[best_at]), "best": best, "end": end, "end_step": int(values.index[-1]),
            "rise": rise, "rise_share": rise / abs(best) if best else float("inf"), "points": n}


def _paired_train(history: pd.DataFrame, column: str) -> str | None:
    """The training loss named like ``column`` (its held-out word swapped for ``train``), else the run's."""
    words = names.metric_words(column)
    for candidate in history.columns:
        if str(candidate) == column or names.held_out(str(candidate)):
            continue
        other = names.metric_words(str(candidate))
        if len(other) == len(words) and all(a == b or (a in names.HELD_OUT and b in ("train", "training"))
                                            for a, b in zip(words, other, strict=True)):
            return str(candidate)
    return signals.loss_column(history)


def _gap(train: pd.Series, turn: dict[str, Any]) -> dict[str, float]:
    """Training loss at the turn and at the end (medians of nearby points), and the held-out gap."""
    k = max(TAIL, len(train) // 10)
    before = train[train.index <= turn["turn_step"]]
    at_turn = float((before.iloc[-k:] if len(before) else train.iloc[:k]).median())
    at_end = float(train.iloc[-k:].median())
    return {"train_at_turn": at_turn, "train_end": at_end, "gap_at_turn": turn["best"] - at_turn,
            "gap_end": turn["end"] - at_end}


def _still_improving(history: pd.DataFrame) -> list[str]:
    """Held-out metrics at their best in their own last stretch."""
    out = []
    for column, way in quality.held_out_metrics(history):
        values = quality.series(history, column)
        if len(values) < MIN_POINTS:
            continue
        k = max(TAIL, len(values) // 5)
        best_at = int(np.argmax(values.to_numpy()) if way == "higher" else np.argmin(values.to_numpy()))
        if best_at >= len(values) - k and values.iloc[best_at] != values.iloc[0]:
            out.append(column)
    return out
