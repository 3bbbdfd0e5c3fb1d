"""GET requests to a tracker's API, bounded in where they go, how long they take and how much they read.

* Where: only addresses :class:`~hourtab.sync.reach.Reach` allows, checked on the address connected to;
  a redirect is followed only on the API's own origin, and pagination links likewise (the token travels
  in headers); anything else is refused as an address that is not allowed.
* How long: each request has an overall deadline (connect, TLS, headers and body) and counts against
  its sync's :class:`~hourtab.sync.limits.Budget`; a worker never sleeps on a rate limit.
* How much: an answer larger than the cap is not read (``Content-Length``, then counted as it
  arrives), it is never decompressed (``Accept-Encoding: identity``), and its nesting is bounded before
  it is parsed (:mod:`hourtab.sync.answers`).

``429`` (and Toggl's ``402`` quota answer, or a quota reported used up) is :class:`RateLimited` with the
delay the tracker asks for: the sync ends and its connection is due again then. ``401``/``403`` is
:class:`TrackerRefused` at once. Network errors and ``5xx`` are retried twice (after 1 s, then 2 s,
within the budget), then reported. Messages never contain the token, a response body or a query string.
"""

from __future__ import annotations

import base64
import functools
import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import httpcore

from hourtab.sync import answers
from hourtab.sync.errors import (
    AddressNotAllowed,
    BadResponse,
    RateLimited,
    TrackerRefused,
    TrackerUnreachable,
)
from hourtab.sync.limits import MIB, Budget, Limits
from hourtab.sync.reach import Deadline, GuardedBackend, Reach
from hourtab.sync.token_box import scrub

log = logging.getLogger(__name__)

USER_AGENT = "HourTab time sync (read-only)"
#: Tries after a network error or a server error, before the sync reports the tracker unreachable.
RETRIES = 2
#: Redirects followed on the API's own origin (a trailing slash added, a path moved).
REDIRECTS = 3
#: When a tracker asks to wait without saying how long.
DEFAULT_RETRY_S = 60


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one TLS context of the process, shared by every sync's pool and never changed after.

    Loading the system's CA store costs about 25 ms of CPU: once a sync, it was a sixth of a sync's
    cost. OpenSSL makes each connection its own state from a shared context, across threads too."""
    return ssl.create_default_context()


class Headers(dict[str, str]):
    """Response headers, looked up without regard to case."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(str(key).lower())


@dataclass
class Reply:
    data: Any
    headers: Mapping[str, str]
    #: Some value in the answer was nested too deep and replaced (see ``answers.too_deep``).
    cut: bool = False


@dataclass
class Api:
    """One tracker's API for one token: base URL, auth headers, where it may go and what it may spend."""

    label: str
    base_url: str
    headers: dict[str, str]
    secret: str
    auth: tuple[str, str] | None = None
    reach: Reach = field(default_factory=Reach)
    limits: Limits = field(default_factory=Limits)
    budget: Budget | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    _not_before: float = 0.0
    _deadline: Deadline = field(default_factory=Deadline)
    _pool: httpcore.ConnectionPool | None = None

    @property
    def requests_made(self) -> int:
        return self.budget.requests if self.budget is not None else 0

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def get(self, path_or_url: str, params: Mapping[str, Any] | None = None) -> Reply:
        """GET a documented path (or a pagination link on the same origin) and return its JSON."""
        url = path_or_url if "://" in path_or_url else self.url(path_or_url)
        if params:
            url += ("&" if urlsplit(url).query else "?") + urlencode(params)
        self._check_origin(url, link=True)
        failures = redirects = 0
        while True:
            self._respect_quota()
            answer = self._send(url)
            if answer is None:
                failures += 1
                self._pause(failures, f"{self.label} could not be reached at {urlsplit(url).netloc}")
                continue
            status, headers, body = answer
            if status >= 500:
                failures += 1
                self._pause(failures, f"{self.label} answered HTTP {status}")
                continue
            if status in (301, 302, 303, 307, 308) and headers.get("Location"):
                redirects += 1
                url = self._redirected(url, headers["Location"], redirects)
                continue
            return self._reply(url, status, headers, body)

    def _reply(self, url: str, status: int, headers: Headers, body: bytes) -> Reply:
        path = urlsplit(url).path
        if status == 429 or (status == 402 and "X-Toggl-Quota-Resets-In" in headers):
            wait = self._retry_after(headers)
            raise RateLimited(f"{self.label} asks to wait {wait} s before the next request (its rate limit); "
                              "the sync continues then.", retry_after=wait)
        if status in (401, 403):
            raise TrackerRefused(f"{self.label} refused the API token (HTTP {status}). Check that the token "
                                 "is current and may read time entries, then enter it again or resume "
                                 "the connection.", status)
        if status != 200:
            raise BadResponse(f"{self.label} answered HTTP {status} to GET {path}.", status)
        self._note_quota(headers)
        try:
            data, cut = answers.loads(body, self.limits.max_depth)
        except ValueError as e:   # not UTF-8, not JSON
            raise BadResponse(f"{self.label} answered GET {path} with something that is not JSON.") from e
        return Reply(data, headers, cut)

    def _pause(self, failures: int, what: str) -> None:
        """Back off before another try, within the budget; past the tries, the tracker is unreachable."""
        budget = self._budget()
        if budget.purpose == "check":   # a token check has a few seconds, not retries
            raise TrackerUnreachable(f"{what}; nothing was stored. Check the API URL and try again.")
        if failures > RETRIES:
            raise TrackerUnreachable(f"{what} (after several tries); the sync will try again later.")
        wait = min(2.0 ** (failures - 1), max(0.0, budget.left_s()))
        if wait > 0:
            self.sleep(wait)

    def _budget(self) -> Budget:
        if self.budget is None:
            self.budget = Budget(self.limits)
        return self.budget

    def _connection_pool(self) -> httpcore.ConnectionPool:
        if self._pool is None:
            self._pool = httpcore.ConnectionPool(ssl_context=tls_context(), max_connections=2,
                                                 network_backend=GuardedBackend(self.reach, self._deadline))
        return self._pool

    def _request_headers(self, url: str) -> list[tuple[str, str]]:
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **self.headers}
        if self.auth is not None:
            pair = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            headers["Authorization"] = f"Basic {pair}"
        return list(headers.items())

    def _send(self, url: str) -> tuple[int, Headers, bytes] | None:
        """One request within its deadline; ``None`` after a network error that may be retried."""
        budget = self._budget()
        self._deadline.at = budget.before_request()
        left = max(0.001, self._deadline.at - time.monotonic())
        timeouts = {"connect": left, "read": left, "write": left, "pool": left}
        try:
            with self._connection_pool().stream("GET", url, headers=self._request_headers(url),
                                                extensions={"timeout": timeouts}) as response:
                headers = Headers((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in response.headers)
                body = self._body(url, response, headers) if response.status == 200 else b""
                status = response.status
        except httpcore.TimeoutException as e:
            if budget.left_s() <= 0:
                raise budget.exhausted() from e
            raise TrackerUnreachable(f"{self.label} did not answer GET {urlsplit(url).path} within "
                                     f"{self.limits.request_s:g} s; the sync will try again later.") from e
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as e:
            log.info("%s: %s", self.label, scrub(type(e).__name__, self.secret))
            return None
        finally:
            self._deadline.at = None
        budget.check_stopped(force=False)
        log.debug("%s GET %s -> %s", self.label, urlsplit(url).path, status)
        return status, headers, body

    def _body(self, url: str, response: httpcore.Response, headers: Headers) -> bytes:
        cap = self.limits.answer_bytes
        too_large = BadResponse(f"{self.label} answered GET {urlsplit(url).path} with more than "
                                f"{cap / MIB:g} MiB; the answer was not read.")
        declared = str(headers.get("Content-Length", "")).strip()
        if declared.isdigit() and int(declared) > cap:
            raise too_large
        if headers.get("Content-Encoding", "identity").strip().lower() not in ("", "identity"):
            raise BadResponse(f"{self.label} answered compressed although asked not to; the answer was not read.")
        body = bytearray()
        for chunk in response.iter_stream():
            body += chunk
            self._budget().received(len(chunk))
            if len(body) > cap:
                raise too_large
        return bytes(body)

    def _redirected(self, url: str, location: str, redirects: int) -> str:
        """A redirect on the API's own origin is followed (a few times); any other is refused."""
        target = urljoin(url, location)
        self._check_origin(target, link=False)
        if redirects > REDIRECTS:
            raise BadResponse(f"{self.label} redirected more than {REDIRECTS} times; set the API URL to the "
                              "address it moved to.")
        return target

    def _check_origin(self, url: str, *, link: bool) -> None:
        own, other = urlsplit(self.base_url), urlsplit(url)
        if (own.scheme, own.netloc) == (other.scheme, other.netloc):
            return
        if link:
            raise BadResponse(f"{self.label} sent a link to another host; it was not followed, so the token "
                              "stays with the API.")
        raise AddressNotAllowed()

    def _retry_after(self, headers: Mapping[str, str]) -> int:
        """Seconds to wait: ``Retry-After`` (seconds or an HTTP date), Toggl's quota reset, else a minute."""
        value = (headers.get("Retry-After") or headers.get("X-Toggl-Quota-Resets-In") or "").strip()
        if value.isdigit():
            return max(1, min(int(value), 86_400))
        try:
            return max(1, min(int(parsedate_to_datetime(value).timestamp() - self.clock() + 0.999), 86_400))
        except (TypeError, ValueError, IndexError):
            return DEFAULT_RETRY_S

    def _note_quota(self, headers: Mapping[str, str]) -> None:
        """Toggl says how many requests are left and when the quota resets: the next request waits for it."""
        remaining, resets = headers.get("X-Toggl-Quota-Remaining"), headers.get("X-Toggl-Quota-Resets-In")
        if remaining is not None and resets and remaining.strip() == "0" and resets.strip().isdigit():
            self._not_before = self.clock() + float(resets)

    def _respect_quota(self) -> None:
        wait = self._not_before - self.clock()
        if wait > 0:
            raise RateLimited(f"{self.label}'s request quota is used up for {int(wait + 0.999)} s; the sync "
                              "continues then.", retry_after=int(wait + 0.999))

