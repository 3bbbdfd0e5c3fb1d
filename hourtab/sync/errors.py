"""What a sync or a connection can refuse or fail with; every message is safe to show (no token)."""

from __future__ import annotations

from hourtab.core.errors import Conflict, HourTabError, InvalidInput, LimitReached, Unauthorized


class SyncError(HourTabError):
    """A sync failed for a reason outside the consultant's input (network, tracker, response)."""


class InvalidConnection(InvalidInput):
    """The connection's settings cannot be used (unknown tracker, bad URL, missing account id)."""


class ChooseWorkspace(InvalidConnection):
    """The token reaches several workspaces and none was chosen; ``choices`` lists (id, label)."""

    def __init__(self, message: str, choices: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.choices = choices


class AlreadyConnected(Conflict):
    """The account already has a connection to this tracker and workspace."""


class _WithStatus(HourTabError):
    """An error that keeps the tracker's HTTP status (``status``; None when there was no answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TrackerRefused(_WithStatus, Unauthorized):
    """The tracker answered 401 or 403: the token is wrong, revoked or lacks the right."""


class RateLimited(LimitReached):
    """The tracker asks us to wait longer than a sync may sleep; try again after ``retry_after`` s."""


class TrackerUnreachable(SyncError):
    """No answer, or a server error, after a few bounded retries."""


class BadResponse(_WithStatus, SyncError):
    """The tracker answered something that is not the documented shape (``status``: its HTTP status)."""


class TokenUnreadable(SyncError):
    """The stored token cannot be decrypted with this installation's key."""


class AddressNotAllowed(InvalidConnection):
    """The tracker's URL or an address it resolves to (or redirects to) is one a connection may not reach.

    The message is the same whatever the reason, so it tells nothing about what listens there."""

    def __init__(self, message: str = "The tracker's address is not allowed.") -> None:
        super().__init__(message)


class OutOfBudget(SyncError):
    """The sync used its budget (requests, bytes or seconds) before reading everything."""


class SyncStopped(SyncError):
    """The connection was removed or paused while its sync read the tracker."""


class SyncFailed(SyncError):
    """A sync job's failure with its outcome (``result["status"]``: refused, failed or out_of_budget),
    which the failed job keeps as its result."""

    def __init__(self, message: str, result: dict) -> None:
        super().__init__(message)
        self.result = result
