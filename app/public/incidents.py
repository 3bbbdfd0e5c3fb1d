"""Published incident writeups under the retainer's public URL: ``/h/<token>/incidents/<slug>[.pdf]``.

Drafts, unknown slugs and bad tokens all 404 alike. Both are ``incidents.writeups.service.incident_document``,
cached in blob storage under a hash of their inputs, so a re-download is a single blob read.
"""

from __future__ import annotations

from typing import Literal

from flask import Response
from flask.typing import ResponseReturnValue

from app.db import get_db
from app.extensions import blobs
from app.public import bp, statement_guard
from app.public.hours import PUBLIC_CSP, _miss
from hourtab.core.errors import NotFound
from hourtab.retainers import service as retainers
from incidents.errors import EvidenceNotFound
from incidents.writeups import service
from incidents.writeups.published import published_by_slug

HEADERS = {"Content-Security-Policy": PUBLIC_CSP, "Referrer-Policy": "no-referrer",
           "X-Robots-Tag": "noindex", "Cache-Control": "private, max-age=60"}


def _render(token: str, slug: str, kind: Literal["html", "pdf"]) -> tuple[bytes, str]:
    db = get_db()
    try:
        retainer_id = retainers.by_token(db, token).id
        incident = published_by_slug(db, retainer_id, slug)
    except (NotFound, EvidenceNotFound):
        raise _miss() from None
    pdf_url = f"/h/{token}/incidents/{slug}.pdf"
    return service.incident_document(db, incident, blobs(), kind, pdf_url=pdf_url,
                                     before_render=lambda: statement_guard.charge_render(f"retainer:{retainer_id}")
                                     ), incident.slug


@bp.route("/h/<token>/incidents/<slug>")
def incident_page(token: str, slug: str) -> ResponseReturnValue:
    data, _ = _render(token, slug, "html")
    return Response(data, mimetype="text/html", headers=HEADERS)


@bp.route("/h/<token>/incidents/<slug>.pdf")
def incident_pdf(token: str, slug: str) -> ResponseReturnValue:
    data, name = _render(token, slug, "pdf")
    return Response(data, mimetype="application/pdf",
                    headers={**HEADERS, "Content-Disposition": f'inline; filename="{name}.pdf"'})
