"""The retainer-hours domain's exception family.

Every error a user can cause is one of these, with a message that is safe to show; the web layer
maps the kinds to HTTP statuses in one place (``app/errors.py``).
"""

from __future__ import annotations


class HourTabError(Exception):
    """Base of every error the ``hourtab`` package raises on purpose."""


class InvalidInput(HourTabError):
    """The caller gave something we cannot use (malformed e-mail, bad CSV, bad terms)."""


class NotFound(HourTabError):
    """The object does not exist, or belongs to another account (the same answer on purpose)."""


class Conflict(HourTabError):
    """The request contradicts what is stored (an e-mail already registered, a duplicate)."""


class LimitExceeded(HourTabError):
    """A plan or rate limit refuses the request; ``retry_after`` is set for rate limits."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PayloadTooLarge(InvalidInput):
    """An upload is larger than the configured limit; refused before it is parsed."""
