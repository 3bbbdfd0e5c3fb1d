"""What a connection may reach: the public API hosts of Toggl, Clockify (and its regions) and Harvest; a
Kimai over https at public addresses only, checked on the address connected to; private and loopback
addresses only with the operator's switch, link-local (cloud metadata) never. A refusal sends nothing
and says nothing but that the address is not allowed."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from pytest_socket import SocketConnectBlockedError

from hourtab.sync import service
from hourtab.sync.clients import kimai, tracker
from hourtab.sync.errors import AddressNotAllowed, InvalidConnection, OutOfBudget, TrackerUnreachable
from hourtab.sync.limits import Budget, Limits
from hourtab.sync.reach import Reach
from tests.helpers.fake_trackers import Kimai, serving
from tests.helpers.servers import free_port
from tests.helpers.sync_runs import TOKEN

CLOSED = Limits(allow_private=False, request_s=10.0, sync_s=30.0)   # room for a healthy request
REFUSED = "The tracker's address is not allowed."


@pytest.mark.parametrize("name, url", [
    ("toggl", "https://evil.example.com"), ("toggl", "https://api.track.toggl.com.evil.example.com"),
    ("clockify", "https://clockify.me.example.com"), ("harvest", "https://api.harvestapp.com:8443"),
    ("kimai", "https://10.0.0.7"), ("kimai", "https://169.254.169.254"), ("kimai", "https://[::1]"),
])
def test_urls_a_connection_may_not_reach_are_refused(name, url):
    with pytest.raises(AddressNotAllowed, match=f"^{REFUSED}$"):
        service.clean_api_url(url, tracker(name), CLOSED)


@pytest.mark.parametrize("name, url", [
    ("toggl", "https://api.track.toggl.com"), ("clockify", "https://euc1.clockify.me"),
    ("clockify", "https://api.clockify.me"), ("harvest", "https://api.harvestapp.com"),
    ("kimai", "https://kimai.example.com"),
])
def test_the_vendors_hosts_and_a_public_kimai_are_accepted(name, url):
    assert service.clean_api_url(url, tracker(name), CLOSED) == url


def test_plain_http_needs_the_switch_and_a_private_address():
    with pytest.raises(InvalidConnection, match="must use https"):
        service.clean_api_url("http://kimai.example.com", tracker("kimai"), CLOSED)
    with pytest.raises(InvalidConnection, match="must use https"):   # the switch is for the office network
        service.clean_api_url("http://93.184.216.34", tracker("kimai"), Limits(allow_private=True))
    assert service.clean_api_url("http://10.1.2.3:8001", tracker("kimai"), Limits(allow_private=True))
    with pytest.raises(AddressNotAllowed):                          # metadata: never, switch or not
        service.clean_api_url("http://169.254.169.254", tracker("kimai"), Limits(allow_private=True))


def _kimai(url: str, reach: Reach) -> kimai.Api:
    api = kimai.api(url, TOKEN, "")
    api.reach, api.limits, api.budget = reach, CLOSED, Budget(CLOSED)
    api.sleep = lambda s: None
    return api


def test_loopback_is_refused_before_anything_is_sent_and_open_and_closed_ports_look_the_same():
    """Pointing a connection at HourTab's own host (or anything else on it) sends no request, so no token
    reaches an access log, and the answer is the same whether something listens there or not."""
    fake = Kimai(TOKEN)
    with serving(kimai=fake) as trackers:
        port = trackers.url.rsplit(":", 1)[1]
        errors = []
        for url in (f"https://127.0.0.1:{port}", f"https://127.0.0.1:{free_port()}",
                    f"https://localhost:{port}", f"https://[::ffff:127.0.0.1]:{port}"):
            with pytest.raises(AddressNotAllowed) as refused:
                _kimai(url, Reach()).get("/api/timesheets")
            errors.append(str(refused.value))
        assert fake.requests == []
    assert set(errors) == {REFUSED}


def test_a_name_is_checked_on_every_address_it_resolves_to_and_connected_as_checked():
    fake = Kimai(TOKEN)
    fake.add(dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC), 3600)
    with serving(kimai=fake) as trackers:
        port = int(trackers.url.rsplit(":", 1)[1])
        office = Reach(allow_private=True, resolve=lambda host, p: ["127.0.0.1"])
        assert _kimai(f"http://kimai.office.test:{port}", office).get("/api/timesheets").data   # by name, allowed
        mixed = Reach(allow_private=True, resolve=lambda host, p: ["127.0.0.1", "169.254.169.254"])
        with pytest.raises(AddressNotAllowed):
            _kimai(f"http://kimai.office.test:{port}", mixed).get("/api/timesheets")
        # DNS rebinding: public when checked, loopback a moment later. Each connection resolves once and
        # connects to the address it checked, so loopback is never reached: the connection goes to the
        # public address, which the tests' network block refuses (only loopback connects in tests).
        answers = iter(["93.184.216.34"] + ["127.0.0.1"] * 10)
        rebinding = Reach(resolve=lambda host, p: [next(answers)])
        seen = len(fake.requests)
        with pytest.raises((AddressNotAllowed, TrackerUnreachable, SocketConnectBlockedError)):
            _kimai(f"https://kimai.rebind.test:{port}", rebinding).get("/api/timesheets")
        assert len(fake.requests) == seen


def test_a_name_that_never_resolves_is_cut_at_the_requests_deadline():
    """``getaddrinfo`` has no timeout: a resolver that never answers must still end at the deadline."""
    release = threading.Event()

    def never_answers(host: str, port: int) -> list[str]:
        release.wait()                       # released at the end, so no thread outlives the test
        return ["127.0.0.1"]

    try:
        api = _kimai("https://kimai.silent.test", Reach(allow_private=True, resolve=never_answers))
        api.limits = tight = Limits(allow_private=True, request_s=0.5, sync_s=1.0)
        api.budget = Budget(tight)
        started = time.monotonic()
        with pytest.raises((TrackerUnreachable, OutOfBudget), match="within"):
            api.get("/api/timesheets")
        assert time.monotonic() - started < 10           # it waited on the resolver forever before
    finally:
        release.set()
