"""Report charts as matplotlib SVG (data: URIs for ``<img>``), drawn from the runs' own series.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state, safe in a web worker);
SVG output is made deterministic (fixed hash salt, no date) so identical inputs give identical
bytes. Charts are drawn once, at the size they are printed (the PDF's text width; the page scales
the same SVG): long series are cut to one min/max pair per point (1/72 in) of the printed plot
(about 900 points), so no spike disappears and the line stays vector. A series still denser than that
would be rasterised, because thousands of vector points make WeasyPrint slow.

Legends sit below the plot, one run per line with its whole name, so they never cover data. A chart
names no figure of its own: the step-time chart marks each run's median step (the key figure) with a
line, and every chart's caption names the runs and series drawn.
"""

from __future__ import annotations

import base64
import io
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from incidents.diagnosis import signals
from incidents.evidence.wandb.downsample import minmax
from incidents.writeups.report import figures as fmt
from incidents.writeups.report.figures import Figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as PlotFigure

DENSE = 1500
#: The printed width of a chart: A4's text width (210 mm less 2 × 16 mm of margins), in inches.
PRINTED_WIDTH_IN = 178 / 25.4
#: The plot's share of the figure's width (``subplots_adjust`` below).
LEFT, RIGHT = 0.11, 0.98
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


#: Inches of the plot's own labels below the axes (tick labels and the axis label), and per legend line.
AXIS_LABELS_IN, LEGEND_LINE_IN = 0.5, 0.17
#: A legend line's characters at 8.5 pt across the printed width: longer run names wrap, never cut.
LEGEND_CHARS = 80


def _figure(legend_lines: int = 0, width: float = PRINTED_WIDTH_IN, height: float = 2.4) -> tuple[PlotFigure, Axes]:
    import matplotlib  # noqa: PLC0415 -- heavy, only when drawing

    matplotlib.rcParams["svg.hashsalt"] = "hourtab"
    # 8.5 pt in a 7 in figure: 11.3 CSS px when the page shows it at its own size, as it does at least.
    matplotlib.rcParams["font.size"] = 8.5
    # Run names and metric keys are the user's text: "$\\frac{$" must be drawn, never parsed as TeX.
    matplotlib.rcParams["text.parse_math"] = False
    from matplotlib.figure import Figure as PlotFigure  # noqa: PLC0415, F811 -- heavy, only when drawing

    legend = LEGEND_LINE_IN * legend_lines + (0.08 if legend_lines else 0.0)
    total = height + legend
    fig = PlotFigure(figsize=(width, total))
    # Fixed margins instead of tight_layout: measuring every label's extent cost more than drawing.
    fig.subplots_adjust(left=LEFT, right=RIGHT, top=1 - 0.1 / total, bottom=(AXIS_LABELS_IN + legend) / total)
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(alpha=0.25, linewidth=0.5)
    return fig, ax


def _legend(fig: PlotFigure, ax: Axes) -> None:
    """The legend below the plot, left-aligned with it: outside the data, whatever the data's shape."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower left", bbox_to_anchor=(LEFT, 0.0), frameon=False,
                   borderaxespad=0.2, handlelength=2.5)


def _uri(fig: PlotFigure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None}, dpi=110)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _plot(ax: Axes, x: np.ndarray, y: np.ndarray, role: str, label: str) -> None:
    x, y = minmax(x, y, SERIES_POINTS)
    ax.plot(x, y, linewidth=WIDTHS.get(role, 0.9), linestyle=STYLES.get(role, "-"), color=COLOURS.get(role),
            label=_plain(label), rasterized=len(x) > DENSE)


def _label(role: str, run: Any) -> str:
    """The legend line of a run: its role and whole name (wrapped, not cut)."""
    name = getattr(run, "name", "") or run.run_id
    text = f"{role}: {name}" + (f" ({run.run_id})" if name != run.run_id else "")
    return "\n".join(textwrap.wrap(text, LEGEND_CHARS)) or role


def _lines(labels: list[str]) -> int:
    return sum(label.count("\n") + 1 for label in labels)


def _finite_points(values: np.ndarray) -> int:
    return int(np.isfinite(values).sum())


def draw_gpu_utilisation(runs: list[tuple[str, Any]]) -> tuple[PlotFigure | None, list[str], list[str]]:
    """(figure or None, sources, runs without a drawable series): a line needs two samples or more."""
    series, sources, absent = [], [], []
    for role, run in runs:
        cols = signals.gpu_columns(run.system)
        frame = run.system
        values = frame[cols].mean(axis=1).to_numpy(dtype="float64") if cols else np.array([])
        if _finite_points(values) < 2:
            absent.append(f"{role} run {fmt.run_label(run)}" + (f" ({_finite_points(values)} GPU sample)"
                                                                 if cols else ""))
            continue
        t = frame["_runtime"].to_numpy(dtype="float64") if "_runtime" in frame.columns else \
            frame.index.to_numpy(dtype="float64") - float(frame.index.min())
        series.append((role, t / 60, values, _label(role, run)))
        sources.append(f"{fmt.run_label(run)} · {', '.join(cols)}")
    if not series:
        return None, sources, absent
    fig, ax = _figure(_lines([s[3] for s in series]))
    for role, t, values, label in series:
        _plot(ax, t, values, role, label)
    ax.set_xlabel("minutes since start")
    ax.set_ylabel("GPU utilisation %")
    ax.set_ylim(0, 100)
    _legend(fig, ax)
    return fig, sources, absent


def gpu_utilisation_chart(runs: list[tuple[str, Any]]) -> Chart:
    fig, sources, absent = draw_gpu_utilisation(runs)
    note = ("No GPU utilisation series (two samples or more) in " + "; ".join(absent) +
            " (CPU run, or system metrics not exported).") if absent else ""
    if fig is None:
        return Chart("GPU utilisation over time", None, "", note)
    return Chart("GPU utilisation over time", _uri(fig), "; ".join(sources), note)


def _step_times(run: Any) -> np.ndarray:
    history = run.history
    if history is None or "step_time_s" not in history.columns:
        return np.array([])
    values = pd.to_numeric(history["step_time_s"], errors="coerce").to_numpy(dtype="float64")
    return values[np.isfinite(values) & (values > 0)]


def _step_series(runs: list[tuple[str, Any]], profile_modes: list[dict[str, Any]], profile_name: str | None,
                 medians: dict[str, Figure]) -> list[tuple[str, str, np.ndarray, str, Figure | None]]:
    series = []
    for role, run in runs:
        values = _step_times(run)
        if values.size:
            series.append((role, _label(role, run), values, f"{fmt.run_label(run)} · history step_time_s",
                           medians.get(role)))
    if series:
        return series
    for mode in profile_modes:
        values = np.asarray(mode.get("step_times_s") or [], dtype="float64")
        if values.size:
            role = "baseline" if mode.get("kind") == "baseline" else "fixed" if mode.get("kind") == "fastwatch" \
                else "incident"
            series.append((role, f"mode {mode.get('mode')}", values,
                           f"{profile_name} · {mode.get('mode')} step_times_s", medians.get(str(mode.get("mode")))))
    return series


def draw_step_times(runs: list[tuple[str, Any]], profile_modes: list[dict[str, Any]], profile_name: str | None,
                    medians: dict[str, Figure] | None = None) -> tuple[PlotFigure | None, list[str]]:
    """(figure or None, sources): each run's step times, and a vertical line at its median step figure."""
    series = _step_series(runs, profile_modes, profile_name, medians or {})
    if not series:
        return None, []
    fig, ax = _figure(_lines([s[1] for s in series]))
    seconds = np.concatenate([s[2] for s in series])
    unit, factor = fmt.time_unit(float(np.median(seconds)))
    everything = seconds * factor
    lo, hi = np.percentile(everything, 0.5), np.percentile(everything, 99.5)
    floor = 1e-3 * factor
    bins = np.geomspace(max(lo, floor), max(hi, lo * 1.01, floor * 1.01), 60)
    for role, label, values, _, median in series:
        ax.hist(values * factor, bins=bins.tolist(), histtype="step" if role != "incident" else "stepfilled",
                alpha=0.9 if role != "incident" else 0.35, linestyle=STYLES.get(role, "-"), linewidth=1.2,
                color=COLOURS.get(role), label=_plain(label))
        if median is not None and median.value is not None:
            ax.axvline(median.value * factor, color=COLOURS.get(role), linestyle=(0, (2, 2)), linewidth=1.0)
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator  # noqa: PLC0415 -- heavy, only when drawing

    # Ticks at 1, 2, 3 and 5 of each decade, written as plain numbers: a narrow range still gets
    # labels. No minor ticks: unlabelled, they added nothing to read and were a quarter of the chart's cost.
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(f"step time ({unit}, log scale)")
    ax.set_ylabel("steps")
    _legend(fig, ax)
    marked = [s for s in series if s[4] is not None and not s[4].missing]
    sources = [s[3] for s in series]
    if marked:
        # A median read from elsewhere than the series drawn (a summary, a profile) is cited as such.
        elsewhere = [median.source for _, _, _, source, median in marked
                     if median is not None and source.split(" · ")[-1] not in median.source]
        sources.append("dotted lines: each run's median step time, as in the key figures"
                       + (" (" + "; ".join(elsewhere) + ")" if elsewhere else ""))
    return fig, sources


def step_time_distribution(runs: list[tuple[str, Any]], profile_modes: list[dict[str, Any]],
                           profile_name: str | None, medians: dict[str, Figure] | None = None) -> Chart:
    fig, sources = draw_step_times(runs, profile_modes, profile_name, medians)
    if fig is None:
        return Chart("Step-time distribution", None, "", "No per-step times in the attached runs or profile.")
    return Chart("Step-time distribution", _uri(fig), "; ".join(sources))


def draw_metric(runs: list[tuple[str, Any]], column: str | None = None, ylabel: str = "loss") -> tuple[PlotFigure | None, list[str], list[str]]:
    """(figure or None, sources, runs without the series): one metric of every run that logged it
    (``column=None``: each run's training loss)."""
    series, absent = [], []
    for role, run in runs:
        history = run.history
        name = column if column is not None else signals.loss_column(history)
        if name is None or history is None or name not in history.columns:
            absent.append(f"{role} run {fmt.run_label(run)}")
            continue
        values = pd.to_numeric(history[name], errors="coerce")
        keep = values.notna().to_numpy()
        series.append((role, history.index.to_numpy(dtype="float64")[keep], values.to_numpy(dtype="float64")[keep],
                       _label(role, run), f"{fmt.run_label(run)} · history {name}"))
    if not series:
        return None, [], absent
    fig, ax = _figure(_lines([s[3] for s in series]))
    for role, x, y, label, _ in series:
        _plot(ax, x, y, role, label)
        if x.size < 20:      # a few points (evaluation rows): each one marked, not only joined
            ax.plot(x, y, linestyle="none", marker="o", markersize=2.5, color=COLOURS.get(role))
    ax.set_xlabel("step")
    ax.set_ylabel(_plain(ylabel))
    _legend(fig, ax)
    return fig, [s[4] for s in series], absent


def loss_curves(runs: list[tuple[str, Any]]) -> Chart:
    fig, sources, absent = draw_metric(runs)
    note = ("No loss metric in " + "; ".join(absent) + ".") if absent else ""
    if fig is None:
        return Chart("Loss curves", None, "", note)
    if len(sources) == 1:
        return Chart("Loss curve", _uri(fig), sources[0], note)
    return Chart(f"Loss curves of {len(sources)} runs, overlaid (a fix to instrumentation alone leaves them on top "
                 "of each other)", _uri(fig), "; ".join(sources), note)


def finding_metrics(runs: list[tuple[str, Any]], fired: list[Any]) -> list[Chart]:
    """The metric each fired finding is about (a collapsed accuracy, a stalled loss), when it is not the
    training loss already charted: a verdict's evidence is drawn, not only told."""
    charts, seen = [], set()
    losses = {signals.loss_column(run.history) for _, run in runs}
    for finding in fired:
        column = (finding.evidence or {}).get("metric")
        if not isinstance(column, str) or column in seen or column in losses:
            continue
        seen.add(column)
        fig, sources, _ = draw_metric(runs, column, column)
        if fig is not None:
            charts.append(Chart(f"{column} ({finding.title.lower()})", _uri(fig), "; ".join(sources)))
    return charts
