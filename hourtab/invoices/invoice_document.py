"""The invoice as HTML and PDF, through the one document renderer (``hourtab.core.documents``)."""

from __future__ import annotations

from hourtab.core.documents import PdfMeta, meta_tags, render, render_pdf
from hourtab.core.i18n import writer
from hourtab.invoices.service import InvoiceView
from hourtab.retainers.currency import format_money


def invoice_html(view: InvoiceView) -> str:
    """Dated when issued, so the same figures give the same bytes however often it is downloaded."""
    invoice, tz = view.invoice, view.retainer.terms().tz
    w = writer(view.retainer.language)
    issued = invoice.issued_at.astimezone(tz)
    title = w.gettext("Invoice %(number)s · %(name)s") % {"number": invoice.label, "name": view.retainer.name}
    meta = meta_tags(PdfMeta(title=title, author=view.issuer.name,
                             created=view.revision.at if view.revision else invoice.issued_at))
    currency = view.figures.currency
    rate = view.figures.tax_rate
    return render("invoice.html", meta=meta, v=view, issued=w.numeric_date(issued.date()),
                  money=lambda amount: format_money(amount, currency, w.language),
                  was=format_money(invoice.issued_total, invoice.currency, w.language),
                  tax_rate=(f"{rate.normalize():f}" if w.language == "en" else w.number(rate)) if rate is not None else "",
                  revised_on=w.numeric_date(view.revision.at.astimezone(tz).date()) if view.revision else "",
                  month=w.period_of_month(invoice.month), **w.template_context())


def invoice_pdf(view: InvoiceView) -> bytes:
    return render_pdf(invoice_html(view), writer(view.retainer.language).page_css())


def invoice_filename(view: InvoiceView) -> str:
    return f"invoice-{view.invoice.label}-{view.invoice.month}.pdf"


__all__ = ["invoice_filename", "invoice_html", "invoice_pdf"]
