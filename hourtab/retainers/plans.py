"""What each plan gives: the retainer limit the retainers service enforces and the price pages promise.

Hours vocabulary, so it lives in the hours domain (the kernel keeps only the ``Account.plan`` column);
in ``retainers`` rather than beside ``billing`` because the retainers service, a layer below, enforces it.
"""

from __future__ import annotations

from hourtab.core.accounts import Account, Plan

#: How many active retainers each plan keeps.
RETAINER_LIMITS = {Plan.FREE: 1, Plan.PRO: 10}
#: What each plan costs, as the sign-up page promises it.
PLAN_PRICES = {Plan.FREE: "free", Plan.PRO: "$9/month"}


def retainer_limit(account: Account) -> int:
    """How many active retainers the account's plan keeps."""
    return RETAINER_LIMITS[Plan(account.plan)]
