"""Quality metrics read by direction, and the rule for a held-out metric that collapses.

A metric's name says which way is better: accuracy, acc, f1, dice, iou, auc, precision, recall,
bleu, rouge, map, elbo… are higher-is-better; loss, error, perplexity, mse, nll… lower-is-better
(a name with both, ``dice_loss``, is a loss). A metric is held out when its name says validation,
test, eval or dev. A held-out higher-is-better metric that falls to near zero (under
``NEAR_ZERO_SHARE`` of its best) or settles on a constant below its best is a collapse: the model
predicts one thing whatever its input. That is an engineering verdict; a training loss falling at
the same time, and identical logged media (every prediction image the same file), support it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.names import has_word, held_out, metric_words
from incidents.diagnosis.subject import Subject

HIGHER = frozenset({"accuracy", "acc", "f1", "fscore", "dice", "iou", "miou", "jaccard", "auc", "auroc", "auprc",
                    "precision", "prec", "recall", "bleu", "rouge", "rougel", "map", "ap", "elbo", "r2", "psnr",
                    "ssim", "top1", "top5", "mcc", "kappa", "sensitivity", "specificity"})
LOWER = frozenset({"loss", "error", "err", "perplexity", "ppl", "mse", "mae", "rmse", "nll", "wer", "cer", "fid",
                   "bpc", "bpd"})
MIN_POINTS = 3
NEAR_ZERO_SHARE = 0.01
#: A constant counts as a collapse when it sits this far below the metric's best.
CONSTANT_DROP = 0.25
CONSTANT_TAIL = 3


def direction(name: str) -> str | None:
    """``higher`` or ``lower`` is better, from the metric's name; None when the name does not say."""
    words = metric_words(name)
    if has_word(words, LOWER):
        return "lower"
    if has_word(words, HIGHER):
        return "higher"
    return None


def _series(history: pd.DataFrame, column: str) -> pd.Series:
    values = pd.to_numeric(history[column], errors="coerce").dropna()
    return values[np.isfinite(values.to_numpy(dtype="float64"))]


series = _series   # one held-out or training series, finite values only (other rules read it too)


def held_out_metrics(history: pd.DataFrame | None) -> list[tuple[str, str]]:
    """(column, direction) of every held-out metric with a direction, quality (higher) ones first."""
    if history is None or history.empty:
        return []
    found = [(str(c), way) for c in history.columns if not str(c).startswith("_")
             and held_out(str(c)) and (way := direction(str(c)))]
    return sorted(found, key=lambda cd: (cd[1] != "higher", cd[0]))


def worsened(history: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Held-out metrics that ended worse than they started, by their direction (start and end are the
    medians of the first and last fifth of their points, at least one each)."""
    out: list[dict[str, Any]] = []
    if history is None:
        return out
    for column, way in held_out_metrics(history):
        values = _series(history, column)
        if len(values) < MIN_POINTS:
            continue
        k = max(1, len(values) // 5)
        start, end = float(values.iloc[:k].median()), float(values.iloc[-k:].median())
        scale = max(float(values.max() - values.min()), abs(start), 1e-12)
        change = (end - start) if way == "higher" else (start - end)
        if change < -0.1 * scale:
            out.append({"metric": column, "direction": way, "start": start, "end": end,
                        "steps": [int(values.index[0]), int(values.index[-1])]})
    return out


def _collapse(values: pd.Series) -> dict[str, Any] | None:
    best_at = int(values.index[int(np.argmax(values.to_numpy()))])
    best, last = float(values.max()), float(values.iloc[-1])
    if best <= 0 or best_at == int(values.index[-1]):
        return None
    tail = values.iloc[-CONSTANT_TAIL:]
    if last <= NEAR_ZERO_SHARE * best:
        how = "near zero"
    elif len(values) > CONSTANT_TAIL and float(tail.max() - tail.min()) == 0.0 \
            and values.iloc[:-CONSTANT_TAIL].nunique() > 1 and last <= (1 - CONSTANT_DROP) * best:
        how = "a constant"
    else:
        return None
    return {"how": how, "best": best, "best_step": best_at, "last": last, "last_step": int(values.index[-1]),
            "first": float(values.iloc[0]), "points": int(len(values))}


def _identical_media(run: Any) -> list[dict[str, Any]]:
    """Media keys whose latest files (at least two) are one and the same."""
    media = getattr(run, "media", {}) or {}
    out = []
    for key, m in media.items():
        same = m.get("same_at_end") or (m.get("count") if m.get("distinct") == 1 else 0) or 0
        if same >= 2:
            out.append({"key": key, **m, "same_at_end": same})
    return out


def quality_collapse(subject: Subject) -> Finding:
    """A held-out quality metric fallen to near zero or to a constant: the model predicts a constant."""
    rule = "quality_collapse"
    history = subject.run.history
    candidates = [c for c, way in held_out_metrics(history) if way == "higher"]
    if not candidates:
        return not_fired(rule, "Not checked: no held-out quality metric (a val/test metric where higher is better, "
                               "such as accuracy, F1, Dice or IoU) in the run's history.")
    label = subject.run_label
    found = None
    for column in candidates:
        values = _series(history, column)
        if len(values) >= MIN_POINTS and (found := _collapse(values)) is not None:
            found["metric"] = column
            break
    read = ", ".join(candidates[:4])
    if found is None:
        return not_fired(rule, f"Held-out quality metrics read ({read}, higher is better): none fell to near zero "
                               "or to a constant below its best.", metrics=candidates)
    column = found["metric"]
    loss_col = signals.loss_column(history)
    loss_fell, loss_text = None, ""
    if loss_col is not None:
        loss = _series(history, loss_col)
        if len(loss) >= 2 * MIN_POINTS:
            m = signals.movement(loss)
            loss_fell = m["change"] < -max(0.1 * m["scale"], 3 * m["stderr"])
            loss_text = (f", while the training loss {loss_col} {'fell' if loss_fell else 'did not fall'} "
                         f"({m['start']:.3g} → {m['end']:.3g})")
    media = _identical_media(subject.run)
    media_text = "".join(
        (f"; all {m['count']} " if m["same_at_end"] == m["count"] else f"; the last {m['same_at_end']} of the "
         f"{m['count']} ") + f"{m['type'].removesuffix('-file')}s logged under {m['key']} (up to step "
        f"{m['last_step']}) are one and the same file" for m in media[:2])
    used = [f"{label} history {column} ({found['points']} points)"]
    if loss_fell is not None:
        used.append(f"{label} history {loss_col}")
    used += [f"{label} media {m['key']} (sha256 of each logged file)" for m in media[:2]]
    evidence = {**found, "direction": "higher", "held_out": True, "loss_metric": loss_col, "loss_fell": loss_fell,
                "identical_media": media, "source": f"{label} history {column}", "evidence_used": used}
    confidence = 0.6 + (0.15 if loss_fell else 0.0) + (0.1 if media else 0.0)
    return Finding(rule, True, "engineering",
                   f"Quality collapse: {column} (held out, higher is better) fell from {found['best']:.3g} at step "
                   f"{found['best_step']} to {found['how']} ({found['last']:.3g} at step {found['last_step']})"
                   f"{loss_text}{media_text}. The model has collapsed to predicting a constant whatever its input: "
                   "check the loss against the class balance (positive weighting, a Dice or focal loss), the output "
                   "activation and threshold, and the learning rate.", evidence, round(confidence, 2))
