"""Template filters shared by the consultant's and the client's pages.

Hours and days are written by the hours domain's presentation module, the same functions the JSON,
the e-mails and the statement use; the pages hold no formatting of their own.
"""

from __future__ import annotations

import re

from flask import Flask
from markupsafe import Markup, escape

from hourtab.retainers.currency import format_money
from hourtab.retainers.presentation import format_clock, format_hours

#: A figure and its unit: "12.5 h", "0:40 h", "130/h", "130 / h".
_FIGURE_UNIT = re.compile(r"(-?\d[\d.,:]*)( |&nbsp;)?(/ ?h|h)\b")


def keep_units(text: object) -> Markup:
    """Escape ``text`` and keep every figure on one line with its unit (no "130 /" then "h")."""
    def keep(m: re.Match) -> str:
        gap = "&nbsp;" if m.group(2) else ""
        return f'<span class="nowrap">{m.group(1)}{gap}{m.group(3).replace(" ", "&nbsp;")}</span>'

    return Markup(_FIGURE_UNIT.sub(keep, str(escape(text))))


def register(app: Flask) -> None:
    """The filters every page may use: ``units``, ``clock`` (0:40), ``hours`` (0.67) and ``money``
    (``{{ amount|money(currency) }}`` → €3,000.00)."""
    app.add_template_filter(keep_units, "units")
    app.add_template_filter(format_clock, "clock")
    app.add_template_filter(format_hours, "hours")
    app.add_template_filter(format_money, "money")
    # ``{% trans %}`` in every page; the client's pages pass their language's ``gettext`` in the
    # render context (``Writer.template_context``), the consultant's pages read English as written.
    app.jinja_env.add_extension("jinja2.ext.i18n")
    app.jinja_env.install_null_translations()  # type: ignore[attr-defined]
