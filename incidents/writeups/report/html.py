"""Render a report with the one template set (``templates/documents/incidents/``), for the page or the PDF.

A plain Jinja2 environment with autoescaping, independent of Flask, so the CLI, the web app and the
benchmark produce the same HTML; ``pdf=True`` only swaps screen details (links, tooltips) for print
ones (page header and footer, numbered sources).
"""

from __future__ import annotations

from functools import lru_cache

from hourtab.core.resources import documents_dir
from incidents.writeups.report.build import Report


@lru_cache(maxsize=1)
def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(str(documents_dir())), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env


def render_html(report: Report, *, pdf: bool = False, pdf_url: str | None = None,
                meta_html: str = "") -> str:
    """The full HTML document. ``meta_html`` carries PDF metadata tags (already escaped)."""
    from markupsafe import Markup

    template = _environment().get_template("incidents/report.html")
    return template.render(report=report, pdf=pdf, pdf_url=pdf_url, meta_html=Markup(meta_html))
