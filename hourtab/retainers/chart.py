"""The period's burn-up chart, drawn by matplotlib as inline SVG (no script, nothing to fetch).

Cumulative hours used per day as a step line, the hours available as a dashed level and the
even pace as a dashed diagonal. The legend is the page's HTML beside the drawings, its samples in
the very same line styles (templates/pages/public/hours/page.html): drawn by matplotlib it was a
third of each drawing's cost, and at ``loc="best"`` it could cover a line.

An SVG scales its text with its width, so one drawing cannot be readable everywhere: the 640 px
chart shown on a 390 px phone drew its labels 5.7 px tall. The page carries two drawings of the
same data, each with text of at least 11 CSS px across the widths it is shown at (see the page's
style): ``WIDE`` from 40rem up (its box is at least 566 px there: 13 × 566 / 640 ≈ 11.5 px) and
``NARROW`` below (at least 318 px on a 360 px phone: 13 × 318 / 360 ≈ 11.5 px; it stops growing
at 30rem, so labels stay under 18 px).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from hourtab.core.i18n import Writer
from hourtab.core.svgchart import PX, artist_group, figure_svg, new_figure, page_svg, with_group
from hourtab.retainers.periods import Period
from hourtab.retainers.presentation import format_hours
from hourtab.retainers.terms import HOUR

if TYPE_CHECKING:  # matplotlib loads only when a chart is drawn (see hourtab.core.svgchart)
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

#: The font a language's chart words are measured with where DejaVu Sans lacks its glyphs
#: (fonts-ipafont-gothic, in scripts/install.sh).
MEASURED_WITH = {"ja": "IPAGothic"}
USED, PACE, AVAILABLE, GRID, MUTED = "#2457c5", "#8a94a6", "#1e7d3a", "#dde1e7", "#5d6778"
#: Points between the plot area and its labels.
LABEL_PAD = 4
#: The id of the hours used line's group in a drawing (gone from the page's SVG, see svgchart.page_svg).
USED_GID = "hours-used"


@dataclass(frozen=True)
class Layout:
    """One drawing's size and margins in CSS px at scale 1, and its text size."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    font_px: float
    suffix: str          # of the title's id, so both drawings can be on one page

    @property
    def font(self) -> float:
        return self.font_px * PX


WIDE = Layout(640, 260, 48, 12, 14, 34, 13, "")
NARROW = Layout(360, 250, 44, 10, 12, 34, 13, "-narrow")


def _nice_step(max_hours: float) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        if max_hours / step <= 6:
            return step
    return 2000


def _steps(period: Period, daily_used: dict[dt.date, int], last: dt.date) -> tuple[list[float], list[float], int]:
    """The step line's vertices in (day offset, hours): each day's total is added at its start."""
    xs, ys, total = [0.0], [0.0], 0
    day = period.start
    while day <= last:
        d = (day - period.start).days
        xs.append(d)
        ys.append(total / HOUR)
        total += daily_used.get(day, 0)
        xs.append(d)
        ys.append(total / HOUR)
        day += dt.timedelta(days=1)
    xs.append((last - period.start).days + 1)
    ys.append(total / HOUR)
    return xs, ys, total


def _place(layout: Layout) -> tuple[float, float, float, float]:
    """The plot area inside the figure, as fractions of its width and height."""
    w, h = layout.width, layout.height
    return (layout.left / w, layout.bottom / h, (w - layout.left - layout.right) / w,
            (h - layout.top - layout.bottom) / h)


def _axes(fig: Figure, layout: Layout, period: Period, y_max_h: int, step: int, w: Writer) -> tuple[Axes, list[Text]]:
    """The plot area, its grid and its labels, without matplotlib's axes: an axis updates its ticks and
    measures its labels twice per drawing (to place an axis title and offset the chart does not
    have), most of a drawing's cost once the legend left. The labels are placed with the axis's own
    transforms and padding, so they sit where its tick labels sat."""
    ax = fig.add_axes(_place(layout))
    ax.set_xlim(0, period.days)
    ax.set_ylim(0, y_max_h)
    ax.set_axis_off()
    hours = range(0, y_max_h + 1, step)
    ax.hlines(list(hours), 0, 1, transform=ax.get_yaxis_transform(), color=GRID, linewidth=1 * PX,
              capstyle="projecting", zorder=0.5)
    labels = []
    to_y, valign, _ = ax.get_yaxis_text1_transform(LABEL_PAD)
    for h in hours:
        labels.append(ax.text(0, h, str(h), transform=to_y, va=valign, ha="right"))
    days = sorted({0, period.days // 2, period.days})
    to_x, valign, _ = ax.get_xaxis_text1_transform(LABEL_PAD)
    for i, d in enumerate(days):
        align = "left" if i == 0 else "right" if i == len(days) - 1 else "center"
        text = ax.text(d, 0, w.short_day(period.start + dt.timedelta(days=d)), transform=to_x, va=valign, ha=align)
        if w.language in MEASURED_WITH:
            # matplotlib measures SVG text with one font, without fallback: one that has the language's
            # glyphs (and Latin ones). The browser still draws the words with the page's fonts.
            text.set_fontfamily(MEASURED_WITH[w.language])
        labels.append(text)
    for text in labels:
        text.set_color(MUTED)
        text.set_parse_math(False)
    return ax, labels


@dataclass(frozen=True)
class _Figure:
    fig: Figure
    used: Line2D
    labels: list[Text]
    drawn: tuple[str, ...]     # the figure in each layout of its key, without the hours used


#: Figures kept, by everything they draw but the hours used (period, scale, available, language,
#: layouts), each with its drawing in each layout with the hours used left out: a cold page after an
#: import draws the same grid, labels and pace with a longer line, so only that line is drawn (into
#: the kept drawing, where a drawing of the whole figure would have it: the same bytes).
FIGURES_KEPT = 32
_FIGURES: OrderedDict[tuple, _Figure] = OrderedDict()
_FIGURES_LOCK = threading.Lock()
T = TypeVar("T")
#: Drawings kept, by all they draw: a change that leaves the period's hours as they were (a late
#: entry in a closed period, a credit, a rename) renders the page again with the very same chart.
_DRAWN: OrderedDict[tuple, tuple[str, ...]] = OrderedDict()


def burnup_svgs(period: Period, available_s: int, daily_used: dict[dt.date, int], today: dt.date,
                inline: bool = False, layouts: tuple[Layout, ...] = (WIDE, NARROW),
                w: Writer | None = None) -> tuple[str, ...]:
    """The chart in each layout (a cold page render draws both, see the module's docstring), from one
    kept figure: after its first drawings only the hours used are drawn. ``w``: the client's language
    of the dates and the title (default English)."""
    w = w or Writer()
    # Through today, or through the last entry when a tracker already holds later (planned) entries.
    last = min(max([today, *daily_used]), period.last_day)
    xs, ys, total = _steps(period, daily_used, last)
    top_s = max(available_s, total, HOUR)
    step = _nice_step(top_s / HOUR * 1.08)
    y_max_h = int(-(-top_s // (step * HOUR)) * step)
    title = _title(period, available_s, total, w)
    # Nothing available draws no pace and no level: an overdrawn period's figure is one, however deep.
    key = (period, y_max_h, step, max(available_s, 0), w.language, layouts)
    with _FIGURES_LOCK:  # a kept figure is redrawn by one thread at a time
        return _kept(_DRAWN, (key, title, tuple(ys), last, inline), lambda: _draw(key, xs, ys, title, inline, w))


def _kept(store: OrderedDict[tuple, T], key: tuple, make: Callable[[], T]) -> T:
    """``store[key]``, made if missing; the least recently used beyond ``FIGURES_KEPT`` go."""
    value = store.pop(key, None)
    store[key] = make() if value is None else value
    while len(store) > FIGURES_KEPT:
        store.popitem(last=False)
    return store[key]


def _draw(key: tuple, xs: list[float], ys: list[float], title: str, inline: bool, w: Writer) -> tuple[str, ...]:
    """The kept figure of ``key`` (made if need be) with the hours used at ``xs``, ``ys``, in each layout."""
    period, y_max_h, step, available_s, _, layouts = key
    kept = _kept(_FIGURES, key, lambda: _figure(period, available_s, y_max_h, step, layouts, w))
    kept.used.set_data(xs, ys)
    out = []
    for layout, drawn in zip(layouts, kept.drawn, strict=True):
        _lay_out(kept, layout)
        svg = with_group(drawn, artist_group(kept.fig, kept.used), USED_GID)
        out.append(page_svg(svg, title=title, css_class="burnup narrow" if layout is NARROW else "burnup",
                            title_id=f"burnup-title{layout.suffix}", inline=inline))
    return tuple(out)


def _lay_out(kept: _Figure, layout: Layout) -> None:
    kept.fig.set_size_inches(layout.width / 100, layout.height / 100)
    kept.fig.axes[0].set_position(_place(layout))
    for text in kept.labels:
        text.set_fontsize(layout.font)


def _figure(period: Period, available_s: int, y_max_h: int, step: int, layouts: tuple[Layout, ...],
            w: Writer) -> _Figure:
    """The chart's figure with the hours used left to set, drawn in each layout without them."""
    fig = new_figure(layouts[0].width, layouts[0].height)
    ax, labels = _axes(fig, layouts[0], period, y_max_h, step, w)
    # Drawn before the pace and the level, as an empty group where its line goes.
    (used,) = ax.plot([], [], color=USED, linewidth=2.5 * PX, solid_joinstyle="miter", gid=USED_GID)
    if available_s > 0:
        ax.plot([0, period.days], [0, available_s / HOUR], color=PACE, linewidth=1.5 * PX, dashes=(4, 8 / 3))
        ax.plot([0, period.days], [available_s / HOUR] * 2, color=AVAILABLE, linewidth=1.5 * PX, dashes=(8 / 3, 2))
    kept = _Figure(fig, used, labels, ())
    drawn = []
    for layout in layouts:
        _lay_out(kept, layout)
        drawn.append(figure_svg(fig))
    return _Figure(fig, used, labels, tuple(drawn))


def _title(period: Period, available_s: int, used_s: int, w: Writer) -> str:
    return w.gettext("Hours used from %(start)s to %(end)s: %(used)s of %(available)s h, against an even pace") % {
        "start": w.short_day(period.start), "end": w.short_day(period.last_day), "used": format_hours(used_s),
        "available": format_hours(available_s)}
