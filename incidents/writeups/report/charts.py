"""Report charts as matplotlib SVG (data: URIs for ``<img>``), drawn from the runs' own series.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state, safe in a web worker);
SVG output is made deterministic (fixed hash salt, no date) so identical inputs give identical
bytes. Charts are drawn once, at the size they are printed (the PDF's text width; the page scales
the same SVG): long series are cut to one min/max pair per point (1/72 in) of the printed plot
(about 900 points), so no spike disappears and the line stays vector. A series still denser than that
would be rasterised, because thousands of vector points make WeasyPrint slow.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from incidents.diagnosis import signals
from incidents.evidence.wandb.downsample import minmax
from incidents.writeups.report import figures as fmt

DENSE = 1500
#: The printed width of a chart: A4's text width (210 mm less 2 × 16 mm of margins), in inches.
PRINTED_WIDTH_IN = 178 / 25.4
#: The plot's share of the figure's width (``subplots_adjust`` below).
LEFT, RIGHT = 0.08, 0.98
#: One min/max pair per point (1/72 in) of the plot as printed: narrower than the lines drawn
#: (0.9–1.6 pt), so a finer cut could not show; about 900 points, drawn as vectors.
SERIES_POINTS = 2 * round(PRINTED_WIDTH_IN * (RIGHT - LEFT) * 72)
COLOURS = {"incident": "#c2410c", "baseline": "#2563eb", "fixed": "#15803d"}
#: Line styles as well as colours, so identical curves (a fix that does not change training) stay visible.
STYLES = {"incident": "-", "baseline": (0, (5, 3)), "fixed": (0, (1, 2))}
WIDTHS = {"incident": 1.6, "baseline": 1.1, "fixed": 1.1}


def _plain(text: str) -> str:
    """A label matplotlib shows as written: ``$`` would start mathtext (and a bad formula raises)."""
    return text.replace("$", r"\$")


@dataclass(frozen=True)
class Chart:
    title: str
    uri: str | None          # data:image/svg+xml;base64,… or None when nothing could be drawn
    source: str              # what was plotted, cited under the chart
    missing: str = ""        # why a chart (or a series) is absent


def _figure(width: float = PRINTED_WIDTH_IN, height: float = 2.6):
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "hourtab"
    # 8.5 pt in a 7 in figure: 11.3 CSS px when the page shows it at its own size, as it does at least.
    matplotlib.rcParams["font.size"] = 8.5
    # Run names and metric keys are the user's text: "$\\frac{$" must be drawn, never parsed as TeX.
    matplotlib.rcParams["text.parse_math"] = False
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    # Fixed margins instead of tight_layout: measuring every label's extent cost more than drawing.
    fig.subplots_adjust(left=LEFT, right=RIGHT, top=0.95, bottom=0.2)
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(alpha=0.25, linewidth=0.5)
    return fig, ax


def _uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None}, dpi=110)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _plot(ax, x: np.ndarray, y: np.ndarray, role: str, label: str) -> None:
    x, y = minmax(x, y, SERIES_POINTS)
    ax.plot(x, y, linewidth=WIDTHS.get(role, 0.9), linestyle=STYLES.get(role, "-"), color=COLOURS.get(role),
            label=_plain(label), rasterized=len(x) > DENSE)


def _label(role: str, run: Any) -> str:
    return f"{role}: {(getattr(run, 'name', '') or run.run_id)[:40]}"


def gpu_utilisation(runs: list[tuple[str, Any]]) -> Chart:
    fig, ax = _figure()
    sources, absent = [], []
    for role, run in runs:
        cols = signals.gpu_columns(getattr(run, "system", None))
        if not cols:
            absent.append(f"{role} run {fmt.run_label(run)}")
            continue
        frame = run.system
        t = frame["_runtime"].to_numpy(dtype="float64") if "_runtime" in frame.columns else \
            frame.index.to_numpy(dtype="float64") - float(frame.index.min())
        _plot(ax, t / 60, frame[cols].mean(axis=1).to_numpy(dtype="float64"), role, _label(role, run))
        sources.append(f"{fmt.run_label(run)} · {', '.join(cols)}")
    note = ("No GPU utilisation metrics in " + "; ".join(absent) + " (CPU run, or system metrics not exported).") \
        if absent else ""
    if not sources:
        return Chart("GPU utilisation over time", None, "", note)
    ax.set_xlabel("minutes since start")
    ax.set_ylabel("GPU utilisation %")
    ax.set_ylim(0, 100)
    ax.legend(loc="best", frameon=False)
    return Chart("GPU utilisation over time", _uri(fig), "; ".join(sources), note)


def _step_times(run: Any) -> np.ndarray:
    history = getattr(run, "history", None)
    if history is None or "step_time_s" not in history.columns:
        return np.array([])
    values = pd.to_numeric(history["step_time_s"], errors="coerce").to_numpy(dtype="float64")
    return values[np.isfinite(values) & (values > 0)]


def step_time_distribution(runs: list[tuple[str, Any]], profile_modes: list[dict[str, Any]],
                           profile_name: str | None) -> Chart:
    series: list[tuple[str, str, np.ndarray, str]] = []
    for role, run in runs:
        values = _step_times(run)
        if values.size:
            series.append((role, _label(role, run), values, f"{fmt.run_label(run)} · history step_time_s"))
    if not series:
        for mode in profile_modes:
            values = np.asarray(mode.get("step_times_s") or [], dtype="float64")
            if values.size:
                role = "baseline" if mode.get("kind") == "baseline" else "fixed" if mode.get("kind") == "fastwatch" \
                    else "incident"
                series.append((role, f"mode {mode.get('mode')}", values, f"{profile_name} · {mode.get('mode')} "
                                                                          "step_times_s"))
    if not series:
        return Chart("Step-time distribution", None, "", "No per-step times in the attached runs or profile.")
    fig, ax = _figure()
    seconds = np.concatenate([s[2] for s in series])
    unit, factor = fmt.time_unit(float(np.median(seconds)))
    everything = seconds * factor
    lo, hi = np.percentile(everything, 0.5), np.percentile(everything, 99.5)
    floor = 1e-3 * factor
    bins = np.geomspace(max(lo, floor), max(hi, lo * 1.01, floor * 1.01), 60)
    for role, label, values, _ in series:
        ax.hist(values * factor, bins=bins, histtype="step" if role != "incident" else "stepfilled",
                alpha=0.9 if role != "incident" else 0.35, linestyle=STYLES.get(role, "-"), linewidth=1.2,
                color=COLOURS.get(role), label=_plain(f"{label} (median {fmt.step_time(float(np.median(values)))})"))
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    # Ticks at 1, 2, 3 and 5 of each decade, written as plain numbers: a narrow range still gets
    # labels. No minor ticks: unlabelled, they added nothing to read and were a quarter of the chart's cost.
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(f"step time ({unit}, log scale)")
    ax.set_ylabel("steps")
    ax.legend(loc="best", frameon=False)
    return Chart("Step-time distribution", _uri(fig), "; ".join(s[3] for s in series))


def loss_curves(runs: list[tuple[str, Any]]) -> Chart:
    fig, ax = _figure()
    sources, absent = [], []
    for role, run in runs:
        history = getattr(run, "history", None)
        column = signals.loss_column(history)
        if column is None:
            absent.append(f"{role} run {fmt.run_label(run)}")
            continue
        values = pd.to_numeric(history[column], errors="coerce")
        _plot(ax, history.index.to_numpy(dtype="float64"), values.to_numpy(dtype="float64"), role,
              _label(role, run))
        sources.append(f"{fmt.run_label(run)} · history {column}")
    note = ("No loss metric in " + "; ".join(absent) + ".") if absent else ""
    if not sources:
        return Chart("Loss curves", None, "", note)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend(loc="best", frameon=False)
    return Chart("Loss curves (overlaid: the fix must not change training)", _uri(fig), "; ".join(sources), note)
