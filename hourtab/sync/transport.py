"""GET requests to a tracker's API, with the patience the vendors ask for and nothing more.

* ``429`` (and Toggl's ``402`` quota answer) waits as long as ``Retry-After`` or the quota header
  says, up to :attr:`Api.max_wait_s` per wait and :attr:`Api.max_retries` times; a longer wait is a
  :class:`RateLimited` error carrying when to come back, so a worker never sleeps for minutes.
* ``401``/``403`` is :class:`TrackerRefused` at once (retrying a refused token only locks accounts).
* Network errors and ``5xx`` are retried twice (after 1 s, then 2 s), then reported: the next sync
  comes soon enough, and a worker should not sit on a tracker that is down.
* Redirects are not followed and pagination links are followed only on the API's own origin: the
  token travels in headers that ``requests`` would otherwise carry to another host.

The clock and the sleeper are parameters, so a caller (a test, a benchmark) decides what waiting costs.
Messages never contain the token, a response body or a query string.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from hourtab.sync.errors import BadResponse, RateLimited, TrackerRefused, TrackerUnreachable
from hourtab.sync.tokens import scrub

log = logging.getLogger(__name__)

#: Seconds to wait for a connection, then for each response.
TIMEOUT = (10.0, 60.0)
USER_AGENT = "HourTab time sync (read-only)"
#: Tries after a network error or a server error, before the sync reports the tracker unreachable.
RETRIES = 2


@dataclass
class Reply:
    data: Any
    headers: Mapping[str, str]


@dataclass
class Api:
    """One tracker's API for one token: base URL, auth headers, and how long we may wait."""

    label: str
    base_url: str
    headers: dict[str, str]
    secret: str
    auth: tuple[str, str] | None = None
    session: requests.Session = field(default_factory=requests.Session)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    max_wait_s: float = 60.0
    max_retries: int = 5
    #: Requests made, for progress and the benchmark.
    requests_made: int = 0
    _not_before: float = 0.0

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path

    def get(self, path_or_url: str, params: Mapping[str, Any] | None = None) -> Reply:
        """GET a documented path (or a pagination link on the same origin) and return its JSON."""
        url = path_or_url if "://" in path_or_url else self.url(path_or_url)
        self._check_origin(url)
        waited = 0
        failures = 0
        while True:
            self._respect_quota()
            response = self._send(url, params, failures)
            if response is None:
                failures += 1
                continue
            status = response.status_code
            if status == 429 or (status == 402 and "X-Toggl-Quota-Resets-In" in response.headers):
                wait = self._retry_after(response.headers, waited)
                if wait > self.max_wait_s or waited >= self.max_retries:
                    raise RateLimited(f"{self.label} asks to wait {int(wait + 0.999)} s before the next request "
                                      "(its rate limit); the sync continues then.", retry_after=int(wait + 0.999))
                log.info("%s answered %s; waiting %.1f s as it asks", self.label, status, wait)
                self.sleep(wait)
                waited += 1
                continue
            if status in (401, 403):
                raise TrackerRefused(f"{self.label} refused the API token (HTTP {status}). Check that the token "
                                     "is current and may read time entries, then enter it again or resume "
                                     "the connection.", status)
            if status >= 500:
                failures += 1
                if failures > RETRIES:
                    raise TrackerUnreachable(f"{self.label} answered HTTP {status} several times; the sync will "
                                             "try again later.")
                continue   # _send pauses before the next try
            if 300 <= status < 400:
                raise BadResponse(f"{self.label} answered with a redirect (HTTP {status}); set the API URL to the "
                                  "address it moved to.")
            if status != 200:
                raise BadResponse(f"{self.label} answered HTTP {status} to GET {urlsplit(url).path}.", status)
            self._note_quota(response.headers)
            try:
                return Reply(response.json(), response.headers)
            except ValueError as e:
                raise BadResponse(f"{self.label} answered GET {urlsplit(url).path} with something that is "
                                  "not JSON.") from e

    def _send(self, url: str, params: Mapping[str, Any] | None, failures: int) -> requests.Response | None:
        """One request; ``None`` after a network error that may be retried (a few times, with pauses)."""
        if failures:
            if failures > RETRIES:
                raise TrackerUnreachable(f"{self.label} could not be reached at {urlsplit(url).netloc} "
                                         "(no answer after several tries); the sync will try again later.")
            self.sleep(min(2.0 ** (failures - 1), self.max_wait_s))
        self.requests_made += 1
        try:
            response = self.session.get(url, params=params, headers={"User-Agent": USER_AGENT, **self.headers},
                                        auth=self.auth, timeout=TIMEOUT, allow_redirects=False)
        except (requests.ConnectionError, requests.Timeout) as e:
            log.info("%s: %s", self.label, scrub(type(e).__name__, self.secret))
            return None
        log.debug("%s GET %s -> %s", self.label, urlsplit(url).path, response.status_code)
        return response

    def _check_origin(self, url: str) -> None:
        own, other = urlsplit(self.base_url), urlsplit(url)
        if (own.scheme, own.netloc) != (other.scheme, other.netloc):
            raise BadResponse(f"{self.label} sent a link to another host ({other.netloc or 'none'}); it was not "
                              "followed, so the token stays with the API.")

    def _retry_after(self, headers: Mapping[str, str], waited: int) -> float:
        """Seconds to wait: ``Retry-After`` (seconds or an HTTP date), Toggl's quota reset, else back off."""
        value = headers.get("Retry-After") or headers.get("X-Toggl-Quota-Resets-In")
        if value:
            value = value.strip()
            if value.isdigit():
                return float(value)
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - self.clock())
            except (TypeError, ValueError):
                pass
        return min(2.0 ** waited, self.max_wait_s)

    def _note_quota(self, headers: Mapping[str, str]) -> None:
        """Toggl says how many requests are left and when the quota resets: wait before the next one."""
        remaining, resets = headers.get("X-Toggl-Quota-Remaining"), headers.get("X-Toggl-Quota-Resets-In")
        if remaining is not None and resets and remaining.strip() == "0" and resets.strip().isdigit():
            self._not_before = self.clock() + float(resets)

    def _respect_quota(self) -> None:
        wait = self._not_before - self.clock()
        if wait <= 0:
            return
        if wait > self.max_wait_s:
            raise RateLimited(f"{self.label}'s request quota is used up for {int(wait + 0.999)} s; the sync "
                              "continues then.", retry_after=int(wait + 0.999))
        self.sleep(wait)


def join(base: str, link: str) -> str:
    """A pagination link, absolute (Harvest writes them absolute; a relative one is read on ``base``)."""
    return urljoin(base, link)
