"""Published incident writeups under the retainer's public URL: ``/h/<token>/incidents/<slug>[.pdf]``.

Drafts, unknown slugs and bad tokens all 404 alike. Both the page and the PDF are rendered from the
same templates and cached in blob storage under a hash of their inputs, so a re-download is a
single blob read.
"""

from __future__ import annotations

from flask import Response
from sqlalchemy import select

from app.consultant.incidents import blobs
from app.db import get_db
from app.public import bp, statement_guard
from app.public.hours import PUBLIC_CSP, _miss
from hourtab.accounts import Account
from hourtab.errors import NotFound
from hourtab.retainers import service as retainers
from incidents import service
from incidents.errors import EvidenceNotFound
from incidents.report.pdf import BlobCache, cache_key, cached_pdf

HEADERS = {"Content-Security-Policy": PUBLIC_CSP, "Referrer-Policy": "no-referrer",
           "X-Robots-Tag": "noindex", "Cache-Control": "private, max-age=60"}


def _published(token: str, slug: str):
    db = get_db()
    try:
        retainer = retainers.by_token(db, token)
        incident = service.published_by_slug(db, retainer.id, slug)
    except (NotFound, EvidenceNotFound):
        raise _miss() from None
    author = db.scalar(select(Account.display_name).where(Account.id == incident.account_id)) or ""
    return db, incident, author


def _render(token: str, slug: str, kind: str) -> tuple[bytes, str]:
    from hourtab.pdf import render_pdf
    from incidents.report.build import build_report
    from incidents.report.html import render_html
    from incidents.report.pdf import pdf_html

    db, incident, author = _published(token, slug)
    store = blobs()
    key = cache_key(service.report_input(db, incident, store, author, with_runs=False))

    def make() -> bytes:
        statement_guard.charge_render()  # a first render costs a report build; cached reads are free
        report = build_report(service.report_input(db, incident, store, author))
        if kind == "pdf":
            return render_pdf(pdf_html(report))
        return render_html(report, pdf_url=f"/h/{token}/incidents/{slug}.pdf").encode("utf-8")

    data, _ = cached_pdf(key, BlobCache(store, kind), make)
    return data, incident.slug


@bp.route("/h/<token>/incidents/<slug>")
def incident_page(token: str, slug: str):
    data, _ = _render(token, slug, "html")
    return Response(data, mimetype="text/html", headers=HEADERS)


@bp.route("/h/<token>/incidents/<slug>.pdf")
def incident_pdf(token: str, slug: str):
    data, name = _render(token, slug, "pdf")
    return Response(data, mimetype="application/pdf",
                    headers={**HEADERS, "Content-Disposition": f'inline; filename="{name}.pdf"'})
