"""Progress of long work, reported from deep inside the domain without threading a callback through.

A job runner sets a reporter for the duration of one job (a context variable, so threads and
requests never see each other's); the readers of large files call :func:`report` as they go.
With no reporter set, :func:`report` costs one lookup and does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Reporter = Callable[[str, int, int], None]

_reporter: ContextVar[Reporter | None] = ContextVar("hourtab_progress", default=None)


def report(phase: str, done: int, total: int) -> None:
    """Say that ``done`` of ``total`` units of ``phase`` are finished (bytes, rows, files)."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter(phase, int(done), int(total))


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    token = _reporter.set(reporter)
    try:
        yield
    finally:
        _reporter.reset(token)


@contextmanager
def quiet() -> Iterator[None]:
    """No reports inside: for work done inside a write transaction, since a report is written from
    another connection and SQLite allows one writer at a time."""
    token = _reporter.set(None)
    try:
        yield
    finally:
        _reporter.reset(token)
