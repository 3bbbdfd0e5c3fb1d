"""Charts for web pages as inline SVG drawn by matplotlib: the one way HourTab draws a chart.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state). Text stays text
(``svg.fonttype = none``: no glyph paths, light pages, the page's font) and labels are plain
(``parse_math=False`` wherever text is drawn, so a ``$`` in a run or metric name is just a
character). Output is deterministic: a fixed hash salt and no date, so equal data give equal bytes
and page caches and ETags stay stable. A figure of which one artist changes between drawings can be
drawn once (``figure_svg``) and that artist alone drawn again into it (``artist_group``,
``with_group``): the same bytes as drawing the whole figure, for a fraction of the cost.
"""

from __future__ import annotations

import io
import re
import threading
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib itself loads only when a chart is drawn
    from matplotlib.artist import Artist
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
    return page_svg(figure_svg(fig), title=title, css_class=css_class, title_id=title_id, inline=inline)


def figure_svg(fig: Figure) -> str:
    """The figure as matplotlib writes it, with HourTab's settings (``SVG_RC``)."""
    import matplotlib  # noqa: PLC0415 -- heavy, see new_figure

    buf = io.StringIO()
    with _LOCK, matplotlib.rc_context(SVG_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None}, transparent=True)
    return buf.getvalue()


def artist_group(fig: Figure, artist: Artist) -> str:
    """The ``<g id="GID">`` element ``figure_svg`` would write for ``artist`` (which has a gid), drawn
    alone at the figure's size: a tenth of the cost of drawing the whole figure again when only this
    artist changed. Its clip path is defined by the figure's drawing only where another artist has
    the same (a line clipped to a plot area with a grid)."""
    import matplotlib  # noqa: PLC0415 -- heavy, see new_figure
    from matplotlib.backends.backend_svg import RendererSVG  # noqa: PLC0415

    width, height = fig.get_size_inches()
    buf = io.StringIO()
    dpi = fig.dpi
    with _LOCK, matplotlib.rc_context(SVG_RC):
        fig.dpi = 72  # as savefig lays out an SVG
        try:
            artist.draw(RendererSVG(width * 72, height * 72, buf))
        finally:
            fig.dpi = dpi
    return _found(buf.getvalue(), str(artist.get_gid())).group(0)


def with_group(svg: str, group: str, gid: str) -> str:
    """``svg`` (from ``figure_svg``) with its ``<g id="GID">`` element replaced by ``group``."""
    found = _found(svg, gid)
    return svg[:found.start()] + group + svg[found.end():]


def _found(svg: str, gid: str) -> re.Match[str]:
    # Empty, the group closes itself; an artist's own group holds no other: the first closing tag ends it.
    found = re.search(rf"<g id=\"{re.escape(gid)}\"(?:/>|>.*?</g>)", svg, re.S)
    if found is None:
        raise ValueError(f"no element with id {gid!r} in the drawing")
    return found


def page_svg(svg: str, *, title: str, css_class: str, title_id: str, inline: bool = True) -> str:
    """``svg`` (from ``figure_svg``) as one ``<svg>`` element with an accessible title (see ``to_svg``)."""
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
