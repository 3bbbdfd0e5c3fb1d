"""What one sync, one request and one token check may spend (the ``HOURTAB_SYNC_*`` settings).

Every request has an overall deadline (connect, TLS, headers and body together) and a cap on its answer's
bytes and JSON depth; every sync has a budget of requests, bytes and seconds, well under a minute, so a
slow, endless or huge tracker costs one worker thread that long and no more. A sync out of budget saves
nothing (a half-read window would look like deletions), keeps its cursor, and continues at its next turn.
The token check of "Connect" runs under its own few seconds, so it never holds a web worker for long.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hourtab.sync.errors import OutOfBudget, SyncStopped

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    #: Seconds one request may take in all (``HOURTAB_SYNC_REQUEST_S``).
    request_s: float = 15.0
    #: Bytes one answer may have (``HOURTAB_SYNC_ANSWER_MB``); a larger one is not read.
    answer_bytes: int = 16 * MIB
    #: Nesting one answer may have (``HOURTAB_SYNC_ANSWER_DEPTH``); deeper values make their entry
    #: unreadable (skipped and listed).
    max_depth: int = 32
    #: Seconds, requests and bytes one sync may spend (``HOURTAB_SYNC_BUDGET_S``, ``_REQUESTS``, ``_MB``).
    sync_s: float = 40.0
    sync_requests: int = 400
    sync_bytes: int = 128 * MIB
    #: Seconds the token check of "Connect" may take in all, every request included (``HOURTAB_SYNC_CHECK_S``).
    check_s: float = 5.0
    #: Private and loopback addresses may be reached (``HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS``).
    allow_private: bool = False

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Limits:
        """The limits the app's settings say (``app.config``'s ``SYNC_*`` keys, from ``HOURTAB_SYNC_*``)."""
        return cls(request_s=float(settings["SYNC_REQUEST_S"]), answer_bytes=int(settings["SYNC_ANSWER_BYTES"]),
                   max_depth=int(settings.get("SYNC_ANSWER_DEPTH", cls.max_depth)),
                   sync_s=float(settings["SYNC_BUDGET_S"]), sync_requests=int(settings["SYNC_BUDGET_REQUESTS"]),
                   sync_bytes=int(settings["SYNC_BUDGET_BYTES"]), check_s=float(settings["SYNC_CHECK_S"]),
                   allow_private=bool(settings["SYNC_ALLOW_PRIVATE_HOSTS"]))

    def describe(self) -> str:
        return (f"{self.sync_requests} requests, {self.sync_bytes // MIB} MiB, {self.sync_s:g} s")


#: What a caller that says nothing gets (the app passes its settings; the tests allow their local trackers).
DEFAULT = Limits()


def current(limits: Limits | None) -> Limits:
    return limits if limits is not None else DEFAULT


@dataclass
class Budget:
    """What a sync (or a token check) has spent; checked before each request and as bytes arrive.

    ``stopped`` is asked (at most every ``poll_s``, the first time ``poll_s`` after the budget starts: a
    sync starts right after it saw its connection active) whether the sync should end at once: its
    connection was removed or paused while the tracker answered."""

    limits: Limits
    seconds: float | None = None
    stopped: Callable[[], bool] | None = None
    poll_s: float = 0.5
    #: "sync", or "check" (the token check of "Connect", which stores nothing when it runs out).
    purpose: str = "sync"
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    requests: int = 0
    bytes: int = 0
    _polled: float = field(default=float("-inf"))

    def __post_init__(self) -> None:
        self.started = self._polled = self.clock()
        if self.seconds is None:
            self.seconds = self.limits.sync_s

    @property
    def ends_at(self) -> float:
        return self.started + float(self.seconds or 0.0)

    def left_s(self) -> float:
        return self.ends_at - self.clock()

    def exhausted(self) -> OutOfBudget:
        if self.purpose == "check":
            return OutOfBudget(f"The tracker did not answer the token check within {self.seconds:g} s; nothing was "
                               "stored. Try again later, or check the API URL.")
        return OutOfBudget(f"The sync reached its budget ({self.limits.describe()}) before reading everything; "
                           "nothing was saved, and it continues at its next turn.")

    def before_request(self) -> float:
        """Count one request; the monotonic time it must be over by (its deadline, within the budget)."""
        self.check_stopped(force=False)
        if self.requests >= self.limits.sync_requests or self.left_s() <= 0:
            raise self.exhausted()
        self.requests += 1
        return min(self.clock() + self.limits.request_s, self.ends_at)

    def received(self, n: int) -> None:
        self.bytes += n
        if self.bytes > self.limits.sync_bytes:
            raise self.exhausted()

    def check_stopped(self, force: bool = True) -> None:
        if self.stopped is None:
            return
        now = self.clock()
        if not force and now - self._polled < self.poll_s:
            return
        self._polled = now
        if self.stopped():
            raise SyncStopped("The connection was removed or paused; its sync stopped and saved nothing.")
