"""Gradient-health rules over wandb.watch histograms: defects in the training code (engineering).

Each reads per-tensor, per-step statistics (``signals.histogram_stats``): ``absmax`` from the outer
bin edges is exact, so "exactly zero" and "unchanged" are tested exactly, not by thresholds. Layer
depth is taken from parameter-name order (``natural_key``), which follows module registration order
in the models we see (``layers.0`` … ``layers.11``, ``embeddings`` before ``encoder`` before ``classifier``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

GROWTH_DECADES = 1.0       # exploding: typical gradient magnitude up ≥ 10× over the run…
RISING_SHARE = 0.6         # …with most step-to-step changes upward
VANISHING_DECADES = 3.0    # vanishing: early layers ≥ 1000× smaller than late layers
MIN_STEPS = 3


def _steps_text(steps: Iterable[Any]) -> list[int]:
    return sorted(int(s) for s in steps)


def _first_nonfinite(loss: pd.Series, logged: dict[str, Any] | None, known: bool) -> int | None:
    """The step from which every logged loss value was non-finite: the loss diverged for good.

    A history frame holds NaN both where the loss was not logged (an evaluation-only row) and
    where NaN was logged; only the reader can tell them apart, and ``logged`` is its record for
    the loss column (``RunEvidence.nonfinite``). A loss that went NaN and came back is not a
    divergence. When the reader's record is not ``known`` (evidence stored before readers kept
    it), only an infinite value counts: a NaN in the frame may be a row that did not log the loss.
    """
    if known:
        return int(logged["from_step"]) if logged and logged.get("from_step") is not None else None
    values = loss.to_numpy(dtype="float64")
    inf = np.isinf(values)
    return int(loss.index[int(np.argmax(inf))]) if inf.any() else None


def _loss_fell(loss: pd.Series) -> tuple[float, float] | None:
    """(start, end) when the training loss fell beyond its range and noise (``signals.movement``)."""
    values = pd.to_numeric(loss, errors="coerce").dropna()
    values = values[np.isfinite(values.to_numpy(dtype="float64"))]
    if len(values) < 10:
        return None
    m = signals.movement(values)
    return (m["start"], m["end"]) if m["change"] <= -max(0.1 * m["scale"], 3 * m["stderr"]) else None


def _loss_divergence(subject: Subject, loss_col: str | None) -> tuple[int | None, dict[str, Any] | None]:
    """The step the loss went non-finite for good (or None), and the reader's non-finite record of it."""
    if loss_col is None:
        return None, None
    record = subject.run.nonfinite
    logged = (record or {}).get(loss_col)
    loss = pd.to_numeric(subject.run.history[loss_col], errors="coerce")
    return _first_nonfinite(loss, logged, record is not None), logged


def _dropped_tensors(grads: pd.DataFrame) -> list[dict[str, Any]]:
    """Tensors whose histogram total shrank: wandb.watch leaves non-finite values out of the count."""
    dropped: list[dict[str, Any]] = []
    for tensor, frame in grads.groupby("tensor"):
        totals = frame.sort_values("step")
        full = totals["total"].max()
        short = totals[totals["total"] < full]
        if len(short):
            dropped.append({"tensor": tensor, "step": int(short["step"].iloc[0]),
                            "non_finite": int(full - short["total"].iloc[0])})
    return dropped


def _growing_tensors(grads: pd.DataFrame, evidence: dict[str, Any]) -> list[dict[str, Any]]:
    """Tensors whose gradients grew, when the median gradient grew steadily; fills ``evidence``."""
    if grads.empty or grads["step"].nunique() < MIN_STEPS:
        return []
    live = grads[grads["absmax"] > 0]
    per_step = live.assign(lg=np.log10(live["absmax"])).groupby("step")["lg"].median().sort_index()
    if len(per_step) < MIN_STEPS:
        return []
    diffs = np.diff(per_step.to_numpy())
    growth = float(per_step.iloc[-1] - per_step.iloc[0])
    rising = float((diffs > 0).mean())
    evidence.update(growth_decades=round(growth, 2), rising_share=round(rising, 2),
                    first_step=int(per_step.index[0]), last_step=int(per_step.index[-1]))
    if growth < GROWTH_DECADES or rising < RISING_SHARE:
        return []
    rows: list[dict[str, Any]] = []
    for tensor, frame in live.sort_values("step").groupby("tensor"):
        first, last = float(frame["absmax"].iloc[0]), float(frame["absmax"].iloc[-1])
        if math.log10(last) - math.log10(first) >= GROWTH_DECADES:
            rows.append({"tensor": tensor, "from": first, "to": last,
                         "steps": [int(frame["step"].iloc[0]), int(frame["step"].iloc[-1])]})
    rows.sort(key=lambda r: -(r["to"] / r["from"] if r["from"] else 0))
    return rows


def _came_back(logged: dict[str, Any] | None) -> str:
    """The loss went non-finite and was finite again after, as a clause; empty when it did not."""
    if not logged:
        return ""
    return (f"the loss was logged non-finite {logged['count']} time(s) (first at step "
            f"{logged['first_step']}) and finite again after: not a divergence")


def _explosion_parts(evidence: dict[str, Any], growth_rows: list[dict[str, Any]], loss_col: str | None,
                     nonfinite_step: int | None, logged: dict[str, Any] | None,
                     dropped: list[dict[str, Any]]) -> list[str]:
    """The sentences of a fired finding: growth, a diverged loss, tensors with non-finite values."""
    parts = []
    if growth_rows:
        top = growth_rows[0]
        parts.append(f"gradient magnitude grew {evidence['growth_decades']:.1f} decades from step "
                     f"{evidence['first_step']} to {evidence['last_step']} in {len(growth_rows)} tensors "
                     f"(largest: {top['tensor']}, max |g| {top['from']:.3g} → {top['to']:.3g})")
    if nonfinite_step is not None:
        began = logged.get("first_step") if logged else None
        parts.append(f"the loss ({loss_col}) became non-finite at step {nonfinite_step} and never recovered"
                     + (f" (first non-finite at step {began})" if began is not None and began != nonfinite_step else ""))
    if dropped:
        parts.append(f"{len(dropped)} tensors had non-finite gradients (first: {dropped[0]['tensor']} at "
                     f"step {dropped[0]['step']})")
    return parts


def exploding(subject: Subject) -> Finding:
    """Gradient spread growing step over step, or non-finite values (loss, or values watch dropped)."""
    rule = "exploding_gradients"
    grads = subject.health_kind("gradients")
    loss_col = signals.loss_column(subject.run.history)
    nonfinite_step, logged = _loss_divergence(subject, loss_col)
    dropped = _dropped_tensors(grads)
    if grads.empty and nonfinite_step is None:
        came_back = f"; {_came_back(logged)}" if logged else ""
        return not_fired(rule, "Not checked: no gradient histograms (wandb.watch log='gradients' or 'all', or "
                               "gradient histograms logged by hand)" + (came_back or " and the loss stayed finite") + ".",
                         **({"transient_non_finite_loss": logged} if logged else {}))
    evidence: dict[str, Any] = {"source": f"{subject.health_source}, gradients"}
    growth_rows = _growing_tensors(grads, evidence)
    evidence["tensors"] = growth_rows[:8]
    evidence["growing_tensors"] = len(growth_rows)
    evidence["non_finite_loss_step"] = nonfinite_step
    evidence["non_finite_tensors"] = dropped[:8]
    if logged and nonfinite_step is None:
        evidence["transient_non_finite_loss"] = logged
    fell = _loss_fell(subject.run.history[loss_col]) if loss_col is not None and growth_rows else None
    if growth_rows and fell and nonfinite_step is None and not dropped:
        evidence["loss_fell"] = fell
        return not_fired(rule, f"Gradient magnitude grew {evidence['growth_decades']:.1f} decades from step "
                               f"{evidence['first_step']} to {evidence['last_step']}, while {loss_col} fell "
                               f"({fell[0]:.3g} → {fell[1]:.3g}) and stayed finite: gradients growing from a small start "
                               "as the model learns, not an explosion.", **evidence)
    if not growth_rows and nonfinite_step is None and not dropped:
        back = _came_back(logged)
        transient = f" {back[0].upper()}{back[1:]}." if back else ""
        return not_fired(rule, "Gradient magnitudes did not grow step over step and no value was non-finite "
                               "for good." + transient if transient else
                         "Gradient magnitudes did not grow step over step and no value was non-finite.", **evidence)
    parts = _explosion_parts(evidence, growth_rows, loss_col, nonfinite_step, logged, dropped)
    confidence = 0.9 if (growth_rows and (nonfinite_step is not None or dropped)) else 0.75
    return Finding(rule, True, "engineering", "Exploding gradients: " + "; ".join(parts) +
                   ". Check the learning rate, initialisation, and add gradient clipping or normalisation.",
                   evidence, confidence)


def vanishing(subject: Subject) -> Finding:
    """Early layers' gradients orders of magnitude below the last layers' while those still move."""
    rule = "vanishing_gradients"
    grads = subject.health_kind("gradients")
    if grads.empty or grads["tensor"].nunique() < 3:
        return not_fired(rule, "Not checked: needs gradient histograms of at least three tensors.")
    weights = grads[grads["tensor"].str.endswith("weight")]
    frame = weights if weights["tensor"].nunique() >= 3 else grads
    steps = sorted(frame["step"].unique())
    recent = frame[frame["step"].isin(steps[len(steps) // 2:])]
    scale = recent.groupby("tensor")["absmax"].median()
    scale = scale[scale > 0]  # all-zero tensors are the dead-layer rule's business
    if len(scale) < 3:
        return not_fired(rule, "Not checked: fewer than three tensors with non-zero gradients.")
    order = sorted(scale.index, key=signals.natural_key)
    third = max(1, len(order) // 3)
    early, late = order[:third], order[-third:]
    early_scale, late_scale = float(scale[early].median()), float(scale[late].median())
    decades = math.log10(late_scale / early_scale)
    evidence: dict[str, Any] = {"early_tensors": early[:6], "late_tensors": late[:6], "early_max_abs_grad": early_scale,
                "late_max_abs_grad": late_scale, "decades": round(decades, 2),
                "steps": [int(steps[len(steps) // 2]), int(steps[-1])],
                "source": f"{subject.health_source}, gradients (median max |g| over the later half)"}
    if decades < VANISHING_DECADES:
        return not_fired(rule, f"Early layers' gradients are within {max(decades, 0):.1f} decades of the last "
                               "layers'.", **evidence)
    confidence = min(0.95, 0.6 + 0.05 * (decades - VANISHING_DECADES))
    return Finding(rule, True, "engineering",
                   f"Vanishing gradients: the first layers ({', '.join(early[:3])}) get gradients "
                   f"{10 ** decades:.2g}× smaller than the last ({', '.join(late[-3:])}) over steps "
                   f"{evidence['steps'][0]}–{evidence['steps'][1]}. Check saturating activations, depth without "
                   "residual connections or normalisation, and initialisation.", evidence, confidence)


def dead_layer(subject: Subject) -> Finding:
    """A module whose every gradient is exactly zero at every logged step."""
    rule = "dead_layer"
    grads = subject.health_kind("gradients")
    if grads.empty:
        return not_fired(rule, "Not checked: no gradient histograms.")
    if grads["step"].nunique() < 2:
        return not_fired(rule, "Not checked: gradients were logged at fewer than two steps.")
    zero_by_tensor = grads.groupby("tensor")["absmax"].max() == 0
    modules: dict[str, list[tuple[str, bool]]] = {}
    for tensor, is_zero in zero_by_tensor.items():
        modules.setdefault(signals.module_of(str(tensor)), []).append((str(tensor), bool(is_zero)))
    dead = {m: [t for t, _ in ts] for m, ts in modules.items() if all(z for _, z in ts)}
    steps = _steps_text(grads["step"].unique())
    evidence: dict[str, Any] = {"modules": sorted(dead, key=signals.natural_key),
                "tensors": sorted((t for ts in dead.values() for t in ts), key=signals.natural_key),
                "steps": [steps[0], steps[-1]], "logged_steps": len(steps),
                "source": f"{subject.health_source}, gradients"}
    if not dead:
        return not_fired(rule, "Every module received non-zero gradients.", **evidence)
    names = ", ".join(evidence["modules"][:4])
    return Finding(rule, True, "engineering",
                   f"Dead layer: module {names} received exactly zero gradient at all {len(steps)} logged steps "
                   f"({steps[0]}–{steps[-1]}). Check for dead ReLUs (large negative bias), a detached tensor, "
                   "or a branch whose output is unused.", evidence, 0.9 if len(steps) >= 5 else 0.7)


def static_parameters(subject: Subject) -> Finding:
    """Parameter histograms identical at every step although gradients flow: no update is applied."""
    rule = "static_parameters"
    params = subject.health_kind("parameters")
    grads = subject.health_kind("gradients")
    if params.empty:
        return not_fired(rule, "Not checked: no parameter histograms (watch log='parameters' or 'all').")
    if params["step"].nunique() < MIN_STEPS:
        return not_fired(rule, f"Not checked: parameters were logged at fewer than {MIN_STEPS} steps.")
    unchanged = params.groupby("tensor")["signature"].nunique() == 1
    # "Non-zero" means ordinary-sized: a gradient 1000× below the run's typical one (vanishing) can
    # be too small to change float32 weights even when the optimizer works.
    grad_scale = grads.groupby("tensor")["absmax"].median() if not grads.empty else pd.Series(dtype=float)
    typical = float(grad_scale[grad_scale > 0].median()) if (grad_scale > 0).any() else 0.0
    moving = set(grad_scale[grad_scale >= typical * 1e-3].index) if typical > 0 else set()
    static = sorted((str(t) for t, same in unchanged.items() if same and t in moving), key=signals.natural_key)
    steps = _steps_text(params["step"].unique())
    evidence: dict[str, Any] = {"tensors": static[:12], "static_tensors": len(static),
                "checked_tensors": int(unchanged.size), "steps": [steps[0], steps[-1]],
                "source": f"{subject.health_source}, weights and gradients"}
    if not grads.empty and not static:
        return not_fired(rule, "Every parameter with a non-zero gradient changed between logged steps.", **evidence)
    if grads.empty:
        return not_fired(rule, "Not checked: parameters are logged but gradients are not, so a frozen tensor "
                               "cannot be told from a broken update.", **evidence)
    modules = sorted({signals.module_of(t) for t in static}, key=signals.natural_key)
    return Finding(rule, True, "engineering",
                   f"Static parameters: {len(static)} tensors ({', '.join(static[:3])}) kept exactly the same "
                   f"histogram from step {steps[0]} to {steps[-1]} while receiving non-zero gradients — the "
                   f"optimizer is not updating {', '.join(modules[:3])} (missing from the optimizer's "
                   "parameter groups, zero learning rate, or weights re-loaded each step).",
                   evidence, 0.9 if len(steps) >= 5 else 0.7)
