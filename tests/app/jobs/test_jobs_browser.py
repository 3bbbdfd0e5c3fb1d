"""A large run uploaded in Chromium: the request returns at once, the bar moves, the run page opens.

The app here runs a real queue (SQLite Huey in the test's data folder) with a consumer in the test
process, as ``hourtab serve`` runs one beside the web server.
"""

from __future__ import annotations

import os
import re
import time

import pytest

from tests.helpers.big_run import big_run_zip, big_steps

pytestmark = [pytest.mark.browser, pytest.mark.slow]


class _Timed:
    """Server-side cost of each POST, from the first byte of the body read to the response: wall seconds,
    and the CPU seconds of the thread that served it (what a parse done in the request would show,
    however busy the machine's other processes keep the CPUs)."""

    def __init__(self, wsgi):
        self.wsgi, self.posts = wsgi, []

    def __call__(self, environ, start_response):
        started, cpu = time.monotonic(), time.thread_time()
        try:
            return self.wsgi(environ, start_response)
        finally:
            if environ["REQUEST_METHOD"] == "POST":
                self.posts.append((environ["PATH_INFO"], time.monotonic() - started, time.thread_time() - cpu))


@pytest.fixture
def app(make_app):
    app = make_app(QUEUE_IMMEDIATE=False)
    app.wsgi_app = _Timed(app.wsgi_app)
    consumer = app.extensions["hourtab.queue"].huey.create_consumer(
        workers=1, worker_type="thread", periodic=False, initial_delay=0.05, max_delay=0.2)
    consumer.start()
    yield app
    consumer.stop(graceful=True)


@pytest.fixture(scope="session")
def big_zip(request):
    steps = big_steps()
    return big_run_zip(request.config.cache.mkdir("hourtab-big-run"), steps), steps


def test_large_upload_shows_a_moving_bar_and_ends_on_the_run_page(app, live_server, page, big_zip):
    archive, steps = big_zip
    page.goto(f"{live_server}/signup")
    page.fill("#email", "big@example.com")
    page.fill("#password", "a long browser password")
    page.fill("#display_name", "Big Run")
    page.click("#signup-submit")
    page.wait_for_url(f"{live_server}/dashboard")

    page.goto(f"{live_server}/evidence")
    page.set_input_files("input[type=file]", str(archive))
    with page.expect_response(lambda r: r.url == f"{live_server}/evidence" and r.request.method == "POST") as sent:
        page.click("form[enctype] button[type=submit]")
    assert sent.value.status == 302
    # The browser's own clock: from the start of the request (body included) to the response.
    timing = sent.value.request.timing
    browser_s = max(timing["responseStart"], timing["responseEnd"]) / 1000
    server_s, server_cpu_s = [(d, c) for path, d, c in app.wsgi_app.posts if path == "/evidence"][-1]
    print(f"upload of {archive.stat().st_size:,} bytes ({steps:,} steps): {browser_s:.3f} s in the browser, "
          f"{server_s:.3f} s ({server_cpu_s:.3f} s CPU) in the app; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    assert server_cpu_s < 1.0, f"the upload request spent {server_cpu_s:.2f} s of CPU in the app"
    if os.getloadavg()[0] < os.cpu_count():       # the browser, the server and the rest share the CPUs
        assert server_s < 1.0, f"the upload request took {server_s:.2f} s in the app"
        assert 0 < browser_s < 1.0, f"the upload request took {browser_s:.2f} s"

    page.wait_for_url(re.compile(r".*/jobs/[0-9a-f]{32}$"))
    seen: list[tuple[str, float]] = []
    deadline = time.monotonic() + 600
    while "/jobs/" in page.url and time.monotonic() < deadline:
        try:
            value = page.evaluate("(() => { const b = document.getElementById('job-bar');"
                                  " return b && b.hasAttribute('value') ? b.value : null; })()")
            phase = page.evaluate("(() => { const p = document.getElementById('job-phase');"
                                  " return p ? p.textContent : ''; })()")
        except Exception:          # the page navigated to the result between two looks
            break
        if value is not None and (not seen or seen[-1] != (phase, value)):
            seen.append((phase, value))
        time.sleep(0.05)
    page.wait_for_url(re.compile(r".*/evidence/\d+$"), timeout=60_000)
    moving = [v for p, v in seen if p.startswith("Reading records") and 0 < v < 100]
    assert len(set(moving)) >= 2, seen            # the bar moved while the records were read
    assert f"{steps:,}" in page.content()         # the run page shows every step
