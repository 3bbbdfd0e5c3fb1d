"""Render a report with the one template set (``templates/documents/incidents/``), for the page or the PDF.

Through the kernel's document renderer (``hourtab.core.documents``), independent of Flask, so the
CLI, the web app and the benchmark produce the same HTML; ``pdf=True`` only swaps screen details
(links, tooltips) for print ones (page header and footer, numbered sources).
"""

from __future__ import annotations

from markupsafe import Markup

from hourtab.core.documents import render
from incidents.writeups.report.build import Report


def render_html(report: Report, *, pdf: bool = False, pdf_url: str | None = None,
                meta_html: str = "") -> str:
    """The full HTML document. ``meta_html`` carries PDF metadata tags (already escaped)."""
    return render("incidents/report.html", report=report, pdf=pdf, pdf_url=pdf_url, meta_html=Markup(meta_html))
