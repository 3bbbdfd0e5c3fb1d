"""Which addresses a tracker connection may reach, enforced where the socket is opened.

A connection's requests carry its API token, so a URL is a way to make HourTab's servers send a secret
somewhere (or to probe the network they sit in). The rules:

* Toggl Track, Clockify (and its regional hosts) and Harvest are reached at their public API hosts only.
* A Kimai URL is ``https`` and must resolve to public addresses only.
* The operator may allow private and loopback addresses (``HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS=1``: a
  self-hosted Kimai on the office network, the tests' local trackers); then, for every tracker, a URL
  whose host resolves to such addresses is accepted, over ``http`` too. Link-local (cloud metadata),
  multicast, unspecified and reserved addresses are never reached.

The check is made on the address actually connected to: :class:`GuardedBackend` (an ``httpcore``
network backend) resolves the host once, refuses it unless *every* address it resolves to is allowed,
and connects to the checked address itself, so a name that resolves differently a moment later (DNS
rebinding) changes nothing. Nothing is sent to an address that is refused, so a refusal tells nothing
about what listens there; its message says only that the address is not allowed.

The same backend enforces each request's overall deadline: every connect, TLS handshake, read and
write gets at most the time left until it (Python's ``ssl`` bounds a whole handshake or record by one
timeout), so a tracker dripping one byte at a time cannot hold a worker past it.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore

from hourtab.sync.errors import AddressNotAllowed

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

#: Addresses no tracker ever lives at, whatever the operator allows (169.254.169.254 is the cloud
#: providers' metadata service).
_NEVER = (ipaddress.ip_network("0.0.0.0/8"), ipaddress.ip_network("169.254.0.0/16"),
          ipaddress.ip_network("fe80::/10"), ipaddress.ip_network("255.255.255.255/32"))
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def _getaddrinfo(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        raise httpcore.ConnectError(f"{host} did not resolve") from e
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolve_within(resolve: Resolver, host: str, port: int, seconds: float) -> list[str]:
    """``resolve(host, port)`` given at most ``seconds``: ``getaddrinfo`` has no timeout of its own, and a
    resolver that never answers would otherwise hold the worker past the request's deadline. The lookup
    runs in a daemon thread, which is left behind (it ends when the resolver gives up) if it is late."""
    answer: dict[str, Any] = {}

    def lookup() -> None:
        try:
            answer["addresses"] = resolve(host, port)
        except BaseException as e:   # handed to the caller, who raises it
            answer["error"] = e

    thread = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    if thread.is_alive():
        raise httpcore.ConnectTimeout(f"{host} did not resolve within the request's deadline")
    if "error" in answer:
        raise answer["error"]
    return answer["addresses"]


def _plain(address: IP) -> IP:
    mapped = getattr(address, "ipv4_mapped", None)   # ::ffff:10.0.0.1 is 10.0.0.1
    return mapped if mapped is not None else address


def is_public(address: IP) -> bool:
    address = _plain(address)
    return address.is_global and not address.is_multicast and not any(address in n for n in _NEVER)


def is_private(address: IP) -> bool:
    """Loopback or a private network (RFC 1918, unique local, carrier-grade NAT): the office's own."""
    address = _plain(address)
    if any(address in n for n in _NEVER) or address.is_multicast or address.is_unspecified:
        return False
    return address.is_loopback or address.is_private or address in _SHARED


@dataclass(frozen=True)
class Reach:
    """What one connection may reach: any public address (``hosts`` empty: Kimai) or the listed hosts,
    and private or loopback addresses when the operator allows them."""

    hosts: tuple[str, ...] = ()
    allow_private: bool = False
    resolve: Resolver = _getaddrinfo

    def check_url(self, url: str) -> None:
        """Refuse a URL no request may go to; the addresses a name resolves to are checked when connecting."""
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".").lower()
        if parts.scheme not in ("https", "http") or not host:
            raise AddressNotAllowed()
        try:
            literal: IP | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None and not self.allowed(host, literal):
            raise AddressNotAllowed()
        if self.allow_private:
            return   # a listed host, or any host resolving to private addresses only (checked on connect)
        if parts.scheme != "https" or (self.hosts and (host not in self.hosts or parts.port not in (None, 443))):
            raise AddressNotAllowed()

    def private_host(self, host: str, within: float = 5.0) -> bool:
        """Whether ``host`` is, or resolves (within ``within`` seconds) only to, private or loopback
        addresses (plain ``http`` may go there)."""
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                resolved = resolve_within(self.resolve, host, 443, within)
                addresses = [ipaddress.ip_address(a.split("%")[0]) for a in resolved]
            except (httpcore.ConnectError, ValueError):
                return False
        return bool(addresses) and all(is_private(a) for a in addresses)

    def allowed(self, host: str, address: IP) -> bool:
        listed = not self.hosts or host.rstrip(".").lower() in self.hosts
        if listed and is_public(address):
            return True
        return self.allow_private and is_private(address)

    def address_for(self, host: str, port: int, within: float = 30.0) -> str:
        """The one address to connect to: ``host`` resolved once (in at most ``within`` seconds), refused
        unless all its addresses are allowed."""
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            resolved = resolve_within(self.resolve, host, port, within)
            addresses = [ipaddress.ip_address(a.split("%")[0]) for a in resolved]
        if not addresses or not all(self.allowed(host, a) for a in addresses):
            raise AddressNotAllowed()
        return str(addresses[0])


class Deadline:
    """The monotonic time one request must be over by (``None``: no request in flight)."""

    def __init__(self) -> None:
        self.at: float | None = None

    def left(self, timeout: float | None) -> float:
        if self.at is None:
            return timeout if timeout is not None else 30.0
        left = self.at - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout("the request's deadline passed")
        return left if timeout is None else min(timeout, left)


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every operation ends by the request's deadline; plain text is written
    only to private addresses (``http`` is for the office network and the tests, never the internet)."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline, *, plain_ok: bool,
                 tls: bool = False) -> None:
        self.inner, self.deadline, self.plain_ok, self.tls = inner, deadline, plain_ok, tls

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, self.deadline.left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not (self.tls or self.plain_ok):
            self.inner.close()
            raise AddressNotAllowed()
        self.inner.write(buffer, self.deadline.left(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self.inner.start_tls(ssl_context, server_hostname, self.deadline.left(timeout))
        return DeadlineStream(inner, self.deadline, plain_ok=self.plain_ok, tls=True)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class GuardedBackend(httpcore.NetworkBackend):
    """``httpcore``'s own socket backend, connecting only to addresses :class:`Reach` allows."""

    def __init__(self, reach: Reach, deadline: Deadline) -> None:
        self.reach, self.deadline = reach, deadline
        self.inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        address = self.reach.address_for(host, port, self.deadline.left(timeout))
        stream = self.inner.connect_tcp(address, port, self.deadline.left(timeout), local_address, socket_options)
        peer = ipaddress.ip_address(str(stream.get_extra_info("server_addr")[0]).split("%")[0])
        if str(peer) != address or not self.reach.allowed(host, peer):   # belt and braces: what we reached
            stream.close()
            raise AddressNotAllowed()
        return DeadlineStream(stream, self.deadline, plain_ok=is_private(peer))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        raise AddressNotAllowed()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
