"""Template filters shared by the consultant's and the client's pages."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

#: A figure and its unit: "12.5 h", "0:40 h", "130/h", "130 / h".
_FIGURE_UNIT = re.compile(r"(-?\d[\d.,:]*)( |&nbsp;)?(/ ?h|h)\b")


def keep_units(text: object) -> Markup:
    """Escape ``text`` and keep every figure on one line with its unit (no "130 /" then "h")."""
    def keep(m: re.Match) -> str:
        gap = "&nbsp;" if m.group(2) else ""
        return f'<span class="nowrap">{m.group(1)}{gap}{m.group(3).replace(" ", "&nbsp;")}</span>'

    return Markup(_FIGURE_UNIT.sub(keep, str(escape(text))))
