"""Plan upgrades through a payment provider, behind one small interface.

Views talk to a ``Billing``; the one shipped is ``ManualBilling``: it records the request and the
operator confirms it once paid (``hourtab user set-plan`` settles every pending request). A real
provider implements the same two methods, returning its hosted checkout page as ``redirect_url``
and confirming from its webhook, without any view changing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account, Plan, PlanRequest
from hourtab.core.errors import Conflict, InvalidInput
from hourtab.retainers.plans import PLAN_PRICES, RETAINER_LIMITS


@dataclass(frozen=True)
class UpgradeStep:
    """What the customer does next: follow ``redirect_url`` (a checkout page) or read ``message``."""

    request: PlanRequest
    message: str
    redirect_url: str | None = None


class Billing(Protocol):
    name: str

    def start_upgrade(self, session: Session, account: Account, plan: str) -> UpgradeStep: ...

    def pending(self, session: Session, account: Account) -> PlanRequest | None: ...


def _plan(plan: str) -> Plan:
    try:
        return Plan(plan)
    except ValueError as e:
        raise InvalidInput(f"Unknown plan {plan!r}; choose one of: {', '.join(p.value for p in Plan)}.") from e


def plan_summary(plan: str) -> str:
    """``pro: up to 10 active retainers, $9/month`` (``free: up to 1 active retainer, no charge``)."""
    p = Plan(plan)
    n = RETAINER_LIMITS[p]
    price = "no charge" if PLAN_PRICES[p] == "free" else PLAN_PRICES[p]
    return f"{p.value}: up to {n} active retainer{'' if n == 1 else 's'}, {price}"


def plan_terms(plan: str) -> str:
    """What the plan gives, for "You are on the free plan (…)": ``up to 1 active retainer, no charge``."""
    return plan_summary(plan).split(": ", 1)[1]


def plan_phrase(plan: str) -> str:
    """The plan as a sentence names it: ``the Pro plan (up to 10 active retainers, $9 a month)``."""
    p = Plan(plan)
    return f"the {p.value.capitalize()} plan ({plan_terms(p.value).replace('/month', ' a month')})"


class ManualBilling:
    """Requests the operator confirms by hand once the customer has paid (invoice, transfer)."""

    name = "manual"

    def pending(self, session: Session, account: Account) -> PlanRequest | None:
        return session.scalars(select(PlanRequest).where(
            PlanRequest.account_id == account.id, PlanRequest.status == "pending")
            .order_by(PlanRequest.id.desc())).first()

    def start_upgrade(self, session: Session, account: Account, plan: str) -> UpgradeStep:
        wanted = _plan(plan)
        if account.plan == wanted.value:
            raise Conflict(f"This account is already on the {wanted.value} plan.")
        request = self.pending(session, account)
        if request is None or request.plan != wanted.value:
            if request is not None:
                request.status = "cancelled"
            request = PlanRequest(account_id=account.id, plan=wanted.value, provider=self.name, status="pending")
            session.add(request)
            session.flush()
        return UpgradeStep(request, f"Thank you: we have your request to move to {plan_phrase(wanted.value)}. "
                                    "It takes effect as soon as the operator confirms your payment.")
