"""The one door for documents: the Jinja environment of ``templates/documents/`` and the PDF render.

Statements, incident reports and alert e-mails are rendered here, by one environment, so they escape,
trim and fail alike; the web pages keep Flask's own environment (``templates/pages/``). The
environment is plain Jinja2, independent of Flask, so the CLI, the job worker and the benchmarks
produce the same bytes as the web app.

- ``.html`` templates autoescape; ``.txt`` ones (the plain-text part of an e-mail) do not, since
  nothing reads them as markup. Included stylesheets hold no expressions.
- ``StrictUndefined``: a name the caller forgot is an error in the test that renders it, never a
  blank in a client's statement.
- ``trim_blocks``/``lstrip_blocks``: a ``{% if %}`` line leaves no blank line behind in a text e-mail.

The PDF half is :func:`hourtab.core.pdf.render_pdf` (WeasyPrint with the safe fetcher); it is
re-exported here so that a document module needs this door only.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from hourtab.core.pdf import PdfMeta, meta_tags, render_pdf
from hourtab.core.resources import documents_dir

__all__ = ["PdfMeta", "meta_tags", "render", "render_pdf", "template_environment"]


@cache
def template_environment() -> Environment:
    """The documents' environment (one per process: templates compile once)."""
    env = Environment(loader=FileSystemLoader(str(documents_dir())),
                       autoescape=select_autoescape(enabled_extensions=("html", "xml"), default=False,
                                                    default_for_string=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       extensions=["jinja2.ext.i18n"])
    # English as written, unless a render passes its language's ``gettext`` (``Writer.template_context``).
    env.install_null_translations()  # type: ignore[attr-defined]
    env.globals["html_lang"] = "en"
    return env


def render(template: str, **context: Any) -> str:
    """``template`` (a path under ``templates/documents/``) rendered with ``context``."""
    return template_environment().get_template(template).render(**context)
