"""Waiting for a condition, never for the clock."""

from __future__ import annotations

import time


def wait_until(predicate, timeout: float, what: str):
    """``predicate()``'s first truthy value, polled until ``timeout`` seconds have passed: a test waits
    for its condition, not for the clock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
