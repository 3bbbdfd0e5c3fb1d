"""A retainer's credits: top-ups (hours bought, maybe for an amount) and signed adjustments, each
with the reason the client sees. Writers never commit and bump the public page's version.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.scoping import get_owned
from hourtab.core.values import check_date, xml_safe
from hourtab.retainers.assign import bump_page_version
from hourtab.retainers.currency import check_currency, parse_amount, stored
from hourtab.retainers.ledger import Credit
from hourtab.retainers.models import Retainer, RetainerCredit
from hourtab.retainers.service import get_retainer, parse_date
from hourtab.retainers.terms import hours_to_seconds


def add_credit(session: Session, account: Account, retainer_id: int, kind: str, on: dt.date | str,
               hours: str, reason: str, amount: str | None = None, currency: str | None = None) -> RetainerCredit:
    """A top-up (positive hours) or an adjustment (signed); the client sees the reason.

    A top-up may be bought for ``amount`` in ``currency`` (default: the retainer's currency).
    """
    retainer = get_retainer(session, account, retainer_id)
    if kind not in ("topup", "adjustment"):
        raise InvalidInput(f"Unknown kind {kind!r}; choose topup or adjustment.")
    seconds = hours_to_seconds(hours, "hours")
    if kind == "topup" and seconds <= 0:
        raise InvalidInput("A top-up adds hours: give a positive number.")
    if seconds == 0:
        raise InvalidInput("An adjustment of zero hours changes nothing.")
    reason = " ".join(xml_safe(reason).split())
    if not reason:
        raise InvalidInput("Give a reason: the client sees it next to the hours.")
    if len(reason) > 500:
        raise InvalidInput("The reason is too long (500 characters at most).")
    on_date = on if isinstance(on, dt.date) else parse_date(on)
    check_date(on_date, "the date")
    price = _price(retainer, kind, amount, currency)
    credit = RetainerCredit(account_id=account.id, retainer_id=retainer.id, kind=kind, on_date=on_date,
                            seconds=seconds, reason=reason, amount=price[0], currency=price[1])
    session.add(credit)
    bump_page_version(retainer)
    session.flush()
    return credit


def _price(retainer: Retainer, kind: str, amount: str | None, currency: str | None) -> tuple:
    """(amount, currency) of a top-up bought in money, or (None, None)."""
    if amount in (None, ""):
        return None, None
    if kind != "topup":
        raise InvalidInput("Only a top-up is bought for an amount; an adjustment has none.")
    if currency in (None, "") and retainer.currency is None:
        raise InvalidInput("Give the top-up's currency (an ISO 4217 code such as EUR).")
    code = check_currency(currency or retainer.currency)
    if retainer.currency is not None and code != retainer.currency:
        # A period bills in one currency: a top-up in another would be left out of what it bills.
        raise InvalidInput(f"This retainer bills in {retainer.currency}; give the top-up's price in "
                           f"{retainer.currency}, not {code}.")
    return parse_amount(amount, code, "top-up amount"), code


def delete_credit(session: Session, account: Account, retainer_id: int, credit_id: int) -> None:
    retainer = get_retainer(session, account, retainer_id)
    credit = get_owned(session, RetainerCredit, account.id, credit_id)
    if credit.retainer_id != retainer.id:
        raise NotFound(f"RetainerCredit {credit_id} not found")
    session.delete(credit)
    bump_page_version(retainer)
    session.flush()


def credits_of(session: Session, retainer: Retainer) -> list[Credit]:
    rows = session.scalars(select(RetainerCredit).where(RetainerCredit.retainer_id == retainer.id)
                           .order_by(RetainerCredit.on_date, RetainerCredit.id))
    return [Credit(c.kind, c.on_date, c.seconds, c.reason, c.id, stored(c.amount, c.currency), c.currency) for c in rows]
