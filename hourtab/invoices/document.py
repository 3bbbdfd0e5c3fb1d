"""The invoice as HTML and PDF, through the one document renderer (``hourtab.core.documents``)."""

from __future__ import annotations

from hourtab.core.documents import PdfMeta, meta_tags, render, render_pdf
from hourtab.invoices.service import InvoiceView
from hourtab.retainers.currency import format_money


def invoice_html(view: InvoiceView) -> str:
    """Dated when issued, so the same figures give the same bytes however often it is downloaded."""
    invoice, tz = view.invoice, view.retainer.terms().tz
    issued = invoice.issued_at.astimezone(tz)
    meta = meta_tags(PdfMeta(title=f"Invoice {invoice.label} · {view.retainer.name}", author=view.issuer.name,
                             created=view.revision.at if view.revision else invoice.issued_at))
    currency = view.figures.currency
    return render("invoice.html", meta=meta, v=view, issued=issued.date().isoformat(),
                  money=lambda amount: format_money(amount, currency),
                  was=format_money(invoice.issued_total, invoice.currency),
                  tax_rate=f"{view.figures.tax_rate.normalize():f}" if view.figures.tax_rate is not None else "",
                  revised_on=view.revision.at.astimezone(tz).date().isoformat() if view.revision else "")


def invoice_pdf(view: InvoiceView) -> bytes:
    return render_pdf(invoice_html(view))


def invoice_filename(view: InvoiceView) -> str:
    return f"invoice-{view.invoice.label}-{view.invoice.month}.pdf"


__all__ = ["invoice_filename", "invoice_html", "invoice_pdf"]
