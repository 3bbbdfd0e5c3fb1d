"""Tests reach loopback only: a connection to an outside address is refused before it leaves the machine."""

from __future__ import annotations

import socket

import pytest
from pytest_socket import SocketConnectBlockedError

from tests.helpers.servers import serve

#: TEST-NET-1 (RFC 5737): an address no machine answers on; were the block off, the refusal below would
#: be a timeout instead of the plugin's error.
OUTSIDE = ("192.0.2.1", 80)


def test_a_connection_to_an_outside_address_is_refused():
    with pytest.raises(SocketConnectBlockedError, match="192.0.2.1"):
        socket.create_connection(OUTSIDE, timeout=2)


def test_loopback_still_reaches_a_server_the_test_started(app):
    import requests

    with serve(app) as url:
        assert requests.get(url + "/healthz", timeout=10).status_code == 200
