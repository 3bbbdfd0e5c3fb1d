"""The writeup document: inputs → report → HTML → PDF, cached in blob storage by its inputs.

Every surface that shows a writeup (the consultant's preview and PDF, the client's page and PDF,
``hourtab incident render`` and the benchmark) calls ``writeup_document``; none assembles the steps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Literal

from hourtab.core.blobs import BlobStore
from hourtab.core.pdf import render_pdf
from incidents.writeups.report.build import Report, build_incident_report
from incidents.writeups.report.html import render_html
from incidents.writeups.report.inputs import ReportInput
from incidents.writeups.report.report_pdf import BlobCache, cache_key, cached_pdf, pdf_html

Kind = Literal["html", "pdf"]


def document_bytes(report: Report, kind: Kind = "pdf", pdf_url: str | None = None) -> bytes:
    """A built report as the HTML page (linking to ``pdf_url``) or the PDF."""
    if kind == "pdf":
        return render_pdf(pdf_html(report))
    return render_html(report, pdf_url=pdf_url).encode("utf-8")


def writeup_document(inputs: ReportInput, kind: Kind = "pdf", *, cache: BlobStore | None = None,
                     full_inputs: Callable[[], ReportInput] | None = None, pdf_url: str | None = None) -> bytes:
    """The document for ``inputs``, from ``cache`` when the same inputs were rendered before.

    ``inputs`` may carry runs by reference only (enough for the cache key); ``full_inputs`` then
    loads the runs' data, and is called only when the document has to be rendered.
    """
    def make() -> bytes:
        return document_bytes(build_incident_report(full_inputs() if full_inputs else inputs), kind, pdf_url)

    if cache is None:
        return make()
    key = cache_key(inputs)
    if kind == "html":  # the page embeds its PDF link, which differs per audience
        key = hashlib.sha256(f"{key}:{pdf_url or ''}".encode()).hexdigest()
    return cached_pdf(key, BlobCache(cache, kind), make)[0]
