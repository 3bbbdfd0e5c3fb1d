"""Charts for web pages as inline SVG drawn by matplotlib: the one way HourTab draws a chart.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state). Text stays text
(``svg.fonttype = none``: no glyph paths, light pages, the page's font) and labels are plain
(``parse_math=False`` wherever text is drawn, so a ``$`` in a run or metric name is just a
character). Output is deterministic: a fixed hash salt and no date, so equal data give equal bytes
and page caches and ETags stay stable.
"""

from __future__ import annotations

import io
import re
import threading
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib itself loads only when a chart is drawn
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType
    from numpy.typing import ArrayLike

#: rcParams read while saving; set only around ``savefig`` and under a lock, because rcParams are
#: process-wide and a threaded server may draw two charts at once.
SVG_RC: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "hourtab",
                                 "font.family": ["DejaVu Sans"], "axes.unicode_minus": False}
_LOCK = threading.Lock()
#: One CSS pixel in points at the 100 dpi the figures are laid out at (line widths, font sizes).
PX = 0.72

_ROOT = re.compile(r"<svg\b[^>]*?(viewBox=\"[^\"]*\")[^>]*>")


# matplotlib takes near two seconds to import: it loads when the first chart is drawn, so the CLI,
# the workers and the pages without a chart never pay for it.
def new_figure(width_px: int, height_px: int) -> Figure:
    from matplotlib.figure import Figure  # noqa: PLC0415 -- heavy, see above

    return Figure(figsize=(width_px / 100, height_px / 100), dpi=100)


def to_svg(fig: Figure, *, title: str, css_class: str, title_id: str, inline: bool = True) -> str:
    """The figure as one ``<svg>`` element with an accessible title, ready to embed in a page.

    ``inline`` drops the XML namespace, which HTML5 does not need inside a page.
    """
    import matplotlib  # noqa: PLC0415 -- heavy, see new_figure

    buf = io.StringIO()
    with _LOCK, matplotlib.rc_context(SVG_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None}, transparent=True)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    # The RDF metadata block names the generator; the page-wide ``*`` style would reach outside the chart.
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r"<style type=\"text/css\">.*?</style>", "", svg, flags=re.S)
    xmlns = "" if inline else ' xmlns="http://www.w3.org/2000/svg"'
    root = (f'<svg{xmlns} {{}} role="img" aria-labelledby="{escape(title_id)}" class="{escape(css_class)}" '
            f'preserveAspectRatio="xMidYMid meet"><title id="{escape(title_id)}">{escape(title)}</title>')
    svg = _ROOT.sub(lambda m: root.format(m.group(1)), svg, count=1)
    # Group ids (figure_1, text_3…) would repeat across the charts of one page; clip-path ids stay.
    svg = re.sub(r"<g id=\"[^\"]*\"", "<g", svg)
    svg = re.sub(r"font-family: [^;\"]*", "font-family: 'DejaVu Sans', sans-serif", svg)
    svg = re.sub(r"<defs>\s*</defs>", "", svg)
    return re.sub(r">\s+<", "><", svg.replace("xlink:href", "href")).strip()


def line_svg(x: ArrayLike, y: ArrayLike, *, title: str, title_id: str, width_px: int = 600, height_px: int = 120,
             color: str = "#1d2430") -> str:
    """A bare line of ``y`` against ``x`` filling the whole box (the evidence pages' series)."""
    fig = new_figure(width_px, height_px)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.plot(x, y, color=color, linewidth=1 * PX)
    ax.margins(x=0, y=0.02)
    return to_svg(fig, title=title, css_class="series", title_id=title_id)
