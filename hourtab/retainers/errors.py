"""Retainer errors beyond the base family (``InvalidTerms`` lives beside the terms it checks)."""

from __future__ import annotations

from hourtab.core.errors import LimitReached
from hourtab.retainers.terms import InvalidTerms

__all__ = ["InvalidTerms", "PlanLimitReached"]


class PlanLimitReached(LimitReached):
    """The account's plan keeps no more active retainers (not a rate limit: waiting does not help)."""
