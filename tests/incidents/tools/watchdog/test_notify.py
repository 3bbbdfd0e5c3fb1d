"""The watchdog's webhook notifier against real local HTTP servers started by each test (issue 21, item 7):
no redirect is followed, the exchange has a deadline, the answer is read only so far, bad URLs are refused."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from app.cli import cli
from incidents.tools.watchdog.notify import NotifyTargetInvalid, notify_targets, webhook

ALERT = {"rule": "watch_overhead", "run_id": "abc123", "at_step": 12, "verdict": "wandb.watch is the cause",
         "draft_incident": "hourtab incident build …", "draft_note": "a draft"}
GiB = 1024**3


class Server:
    """A loopback HTTP server whose handler is a function of (handler, server) given per test."""

    def __init__(self, respond) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self.sent = 0
        self.stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append((self.command, self.path, self.rfile.read(length)))
                try:
                    respond(self, outer)
                except OSError:  # the client hung up, as it should on a slow or huge answer
                    pass

            do_GET = do_POST = _any  # noqa: N815 - http.server's naming

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/hooks/T0/SECRET"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def write(self, handler: BaseHTTPRequestHandler, data: bytes) -> None:
        handler.wfile.write(data)
        handler.wfile.flush()
        self.sent += len(data)


@contextmanager
def serving(respond) -> Iterator[Server]:
    server = Server(respond)
    server.thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.httpd.shutdown()
        server.httpd.server_close()
        server.thread.join()


def accept(handler, server):
    handler.send_response(204)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def test_a_2xx_answer_is_delivery():
    with serving(accept) as server:
        assert webhook(server.url)(ALERT) is None
    ((method, path, body),) = server.requests
    assert (method, path) == ("POST", "/hooks/T0/SECRET")
    assert json.loads(body)["rule"] == "watch_overhead" and "[hourtab watchdog]" in json.loads(body)["text"]


def test_a_redirect_is_not_followed_and_the_alert_is_undelivered():
    with serving(accept) as elsewhere:
        def redirect(handler, server):
            handler.send_response(302)
            handler.send_header("Location", elsewhere.url)
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        with serving(redirect) as hook:
            error = webhook(hook.url)(ALERT)
    assert error == (f"webhook http://127.0.0.1:{hook.httpd.server_port} answered 302 Found (a redirect, which is "
                     "not followed): the alert was not delivered")
    assert elsewhere.requests == []  # nothing went to the other address, as a GET or otherwise
    assert "SECRET" not in error


def test_an_error_answer_is_undelivered():
    def fail(handler, server):
        handler.send_response(500)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with serving(fail) as server:
        assert webhook(server.url)(ALERT).endswith("answered 500 Internal Server Error: the alert was not delivered")


@pytest.mark.parametrize("stage", ["body", "headers"])
def test_an_answer_dripped_a_byte_at_a_time_is_cut_off_at_the_deadline(stage):
    def drip(handler, server):
        if stage == "body":
            handler.send_response(200)
            handler.send_header("Content-Length", "1000000")
            handler.end_headers()
        else:
            server.write(handler, b"HTTP/1.1 200 OK\r\n")
        while not server.stopping.wait(0.2):  # one byte every 0.2 s, until the client hangs up
            server.write(handler, b"X-Slow: y\r\n"[:1] if stage == "headers" else b"x")

    with serving(drip) as server:
        started = time.monotonic()
        error = webhook(server.url, timeout=1.0)(ALERT)
        took = time.monotonic() - started
    assert error == f"webhook http://127.0.0.1:{server.httpd.server_port} did not answer within 1 s: the alert " \
                    "was not delivered"
    assert took < 3.0  # the deadline holds for the whole exchange, not per byte (once: 100 s and more)


def test_a_huge_answer_is_read_only_so_far():
    def huge(handler, server):
        handler.send_response(200)
        handler.send_header("Content-Length", str(4 * GiB))
        handler.end_headers()
        chunk = b"\0" * (1024 * 1024)
        while not server.stopping.is_set() and server.sent < 4 * GiB:
            server.write(handler, chunk)

    with serving(huge) as server:
        assert webhook(server.url, timeout=5.0)(ALERT) is None  # accepted with 200: delivered
    # The client read at most 64 KiB and hung up; what the server got out is what the socket buffers held.
    assert server.sent < 64 * 1024 * 1024


@pytest.mark.parametrize("url, fragment", [
    ("http://hooks.example.com/T0\r\nX-Injected: 1", "has a line break at character 28"),
    ("https://hooks.example.com/a b", "has a space at character 28"),
    ("https://hooks.example.com/\x00", "has a control character"),
    ("https:///no-host", "valid host and port"),
    ("http://hooks.example.com:99999/x", "valid host and port"),
    ("https://user:secret@hooks.example.com/x", "must not carry user:password@"),
    ("https://hooks.example.com/é", "beyond ASCII"),
    ("http://[::1/", "valid host and port"),                         # urlsplit's own ValueError
])
def test_bad_urls_are_refused(url, fragment):
    with pytest.raises(NotifyTargetInvalid) as refused:
        notify_targets((url,))
    assert fragment in str(refused.value) and "secret" not in str(refused.value)


def test_a_crlf_in_notify_exits_2_in_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["watchdog", str(tmp_path), "--once", "--notify",
                                      "https://hooks.example.com/T0\r\nX-Injected: 1"])
    assert result.exit_code == 2
    assert result.output == "Error: --notify URL has a line break at character 29; refusing it.\n"


def test_an_unclosed_ipv6_bracket_exits_2_in_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["watchdog", str(tmp_path), "--once", "--notify", "http://[::1/"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "valid host and port" in result.output and "Traceback" not in result.output
