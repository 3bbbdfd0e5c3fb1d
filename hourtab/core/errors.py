"""The one error family every package raises on purpose (hours, incidents, fastwatch, kernel).

Every error a user can cause is one of these kinds, with a message that is safe to show; domain
errors subclass a kind. The web layer maps kinds to HTTP statuses in one place (``app/errors.py``)
and the CLI maps them to exit codes in one place (``app/cli/errors.py``).
"""

from __future__ import annotations


class HourTabError(Exception):
    """Base of every error raised on purpose; a bare one is a failure, not the caller's mistake."""


class InvalidInput(HourTabError):
    """The caller gave something we cannot use (malformed e-mail, bad CSV, bad terms, bad archive)."""


class NotFound(HourTabError):
    """The object does not exist, or belongs to another account (the same answer on purpose)."""


class Unauthorized(HourTabError):
    """Credentials that match no account (the same answer for a wrong e-mail or password)."""


class Conflict(HourTabError):
    """The request contradicts what is stored (an e-mail already registered, a duplicate)."""


class LimitReached(HourTabError):
    """A plan or rate limit refuses the request; ``retry_after`` is set for rate limits."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after



class PayloadTooLarge(InvalidInput):
    """An upload is larger than the configured limit; refused before it is parsed."""


class Unavailable(HourTabError):
    """A feature needs something this installation lacks (an optional extra); not the input's fault."""


class StorageFull(HourTabError):
    """The disk (or the database's) is full: the work was rolled back, so nothing was lost."""

    def __init__(self, message: str = "The server's storage is full; nothing was lost. Try again once space "
                                      "is freed.") -> None:
        super().__init__(message)


#: What a full disk says: ENOSPC and EDQUOT from the OS, SQLite's and PostgreSQL's own words (53100).
_FULL_ERRNOS = (28, 122)
_FULL_WORDS = ("database or disk is full", "no space left on device", "could not extend file", "disk full")


def storage_full(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it, or the driver error it wraps) is a full disk."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, StorageFull) or (isinstance(e, OSError) and e.errno in _FULL_ERRNOS):
            return True
        if getattr(e, "sqlstate", None) == "53100" or any(w in str(e).lower() for w in _FULL_WORDS):
            return True
        orig = getattr(e, "orig", None)
        stack += [e.__cause__, e.__context__, orig if isinstance(orig, BaseException) else None]
    return False
