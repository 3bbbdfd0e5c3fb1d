"""What an invoice bills for a statement month: one line per fee, hours, overage and top-up, from the
same priced periods as the statement (``retainers.pricing``), then an optional tax line and the total.

Pure: a ledger in, figures out. Each line's amount is already in the currency's minor unit, the
subtotal is their sum, and the tax is rounded once, half-up, so the lines always add up to the total.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from hourtab.core.errors import InvalidInput
from hourtab.core.i18n import N_, Writer, writer
from hourtab.retainers.currency import format_money, quantize
from hourtab.retainers.ledger import Ledger
from hourtab.retainers.presentation import format_hours
from hourtab.retainers.pricing import price_period
from hourtab.statements import statement_indices


class NothingToInvoice(InvalidInput):
    """The month has no price (its terms carry no fee nor rate) or mixes currencies."""


@dataclass(frozen=True)
class Line:
    text: str
    amount: Decimal


@dataclass(frozen=True)
class InvoiceFigures:
    currency: str
    lines: tuple[Line, ...]
    subtotal: Decimal
    tax_label: str
    tax_rate: Decimal | None
    tax: Decimal | None
    total: Decimal
    #: The first days of the periods billed (what revisions are looked up by).
    starts: tuple = ()


def _period_lines(ledger: Ledger, index: int, w: Writer) -> tuple[str, list[Line]]:
    balance = ledger.periods[index]
    money = price_period(balance, ledger.period_credits(index))
    if money is None:
        raise NothingToInvoice(f"{balance.period.label} has no fee nor hourly rate to invoice; "
                               "set them in the retainer's terms first.")
    label = w.period(balance.period)

    def said(text: str, seconds: int, rate: Decimal | None = None) -> str:
        rate_text = format_money(rate, money.currency, w.language) if rate is not None else ""
        return w.gettext(text) % {"period": label, "hours": format_hours(seconds), "rate": rate_text}

    lines = []
    if money.fee is not None:
        lines.append(Line(said(N_("Retainer fee, %(period)s (%(hours)s h)"), balance.allotment_s), money.fee))
    elif money.hours_billed is not None and money.rate is not None:
        lines.append(Line(said(N_("Hours used, %(period)s: %(hours)s h at %(rate)s per hour"),
                               money.hours_billed_s, money.rate), money.hours_billed))
    if money.overage and money.overage_rate is not None:
        lines.append(Line(said(N_("Overage, %(period)s: %(hours)s h at %(rate)s per hour"),
                               balance.overage_s, money.overage_rate), money.overage))
    for credit in ledger.period_credits(index):
        if credit.kind != "topup" or credit.amount is None or credit.currency is None:
            continue
        if credit.currency != money.currency:   # bought before the retainer's currency changed
            raise NothingToInvoice(f"A top-up of {label} was bought in {credit.currency} and the month bills "
                                   f"in {money.currency}; an invoice has one currency.")
        text = w.gettext("Top-up of %(hours)s h, %(on)s") % {"hours": format_hours(credit.seconds),
                                                              "on": w.numeric_date(credit.on)}
        lines.append(Line(text, quantize(credit.amount, money.currency)))
    return money.currency, lines


def invoice_figures(ledger: Ledger, month: str, tax_label: str = "", tax_rate: Decimal | None = None,
                    language: str | None = None) -> InvoiceFigures:
    """The lines, tax and total of the periods that start in ``month`` (``YYYY-MM``), the lines
    written in the client's ``language``."""
    indices = statement_indices(ledger, month)
    currencies, lines = set(), []
    w = writer(language)
    for i in indices:
        currency, more = _period_lines(ledger, i, w)
        currencies.add(currency)
        lines += more
    if len(currencies) != 1:
        raise NothingToInvoice(f"The periods of {month} are priced in {', '.join(sorted(currencies))}; "
                               "an invoice has one currency.")
    currency = currencies.pop()
    subtotal = quantize(sum((line.amount for line in lines), Decimal(0)), currency)
    tax = None if tax_rate is None else quantize(subtotal * tax_rate / 100, currency)
    return InvoiceFigures(currency=currency, lines=tuple(lines), subtotal=subtotal, tax_label=tax_label,
                          tax_rate=tax_rate, tax=tax, total=subtotal + (tax or Decimal(0)),
                          starts=tuple(ledger.periods[i].period.start for i in indices))
