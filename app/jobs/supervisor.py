"""The consumer ``hourtab serve`` keeps beside the web server: started, watched, restarted with back-off.

It is ``hourtab worker`` in a child process of its own session (so a Ctrl-C meant for the server
reaches it only through the server, which stops it), leaving by itself if the server is killed.
When it dies, the supervisor forgets its consumer row at once, so ``/healthz`` shows the gap
while it lasts, and starts a new one: after 1 s, doubling up to a minute while they keep dying
young.

Only the process that started it stops it. gunicorn forks its workers from ``hourtab serve``'s own
stack, and a worker leaves by raising ``SystemExit`` through that stack: it runs ``serve``'s
``finally`` too, with a copy of this object. Stopping from there terminated the real consumer (so
the supervisor started another on the way out) and waited on a child that was not the worker's,
under a lock copied held, until gunicorn killed it 10 s later.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from sqlalchemy.pool import NullPool

from hourtab.core.db import make_engine, make_sessionmaker, transaction
from hourtab.core.jobs import consumer_gone

log = logging.getLogger(__name__)

# Popen waits for the child's exec on a close-on-exec pipe. gunicorn forks its workers from this
# process without exec, so a worker forked while a Popen is under way keeps that pipe open and the
# Popen (and with it the supervisor: no log line, no restart after a crash) waits until that worker
# exits. Every fork in this process therefore waits for a spawn under way and none starts during
# one; Popen itself runs no fork hooks (no preexec_fn), so it never waits for itself.
_spawning = threading.Lock()
os.register_at_fork(before=_spawning.acquire, after_in_parent=_spawning.release,
                    after_in_child=_spawning.release)


class Supervisor:
    def __init__(self, threads: int | None = None, database_url: str | None = None, first_s: float = 1.0,
                 most_s: float = 60.0, healthy_s: float = 30.0) -> None:
        self.threads, self.database_url = threads, database_url
        self.first_s, self.most_s, self.healthy_s = first_s, most_s, healthy_s
        self.process: subprocess.Popen | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="hourtab-supervisor")
        self._owner = os.getpid()

    def start(self) -> None:
        self._owner = os.getpid()
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        if os.getpid() != self._owner:   # a forked copy (a gunicorn worker leaving): not ours to stop
            return
        self._stopping.set()
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        self._thread.join(timeout=timeout)

    def _spawn(self) -> subprocess.Popen:
        # Without a thread count the consumer reads HOURTAB_WORKER_THREADS, as `hourtab worker` does.
        threads = ["--threads", str(self.threads)] if self.threads else []
        command = [sys.executable, "-c", "from app.cli import main; main()", "worker", *threads,
                   "--parent-pid", str(os.getpid())]
        with _spawning:
            return subprocess.Popen(command, start_new_session=True)

    def _loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            started = time.monotonic()
            self.process = self._spawn()
            log.warning("queue consumer started (pid %d)", self.process.pid)
            code = self.process.wait()
            if self._stopping.is_set():
                return
            self._forget(self.process.pid)
            failures = 0 if time.monotonic() - started >= self.healthy_s else failures + 1
            delay = min(self.most_s, self.first_s * 2 ** max(0, failures - 1))
            log.warning("queue consumer (pid %d) stopped (%s); starting another in %.0f s",
                        self.process.pid, _exit_reason(code), delay)
            self._stopping.wait(delay)

    def _forget(self, pid: int) -> None:
        """The dead consumer no longer counts as seen (it cannot say so itself after a kill -9)."""
        if not self.database_url:
            return


        # No pooled connection stays open in this process: gunicorn forks its workers from it.
        engine = make_engine(self.database_url, poolclass=NullPool)
        try:
            with make_sessionmaker(engine)() as session, transaction(session):
                consumer_gone(session, f"{socket.gethostname()}:{pid}")
        except Exception as e:   # the row ages out within a lease anyway
            log.warning("could not forget the stopped consumer (%s)", type(e).__name__)
        finally:
            engine.dispose()


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return "exited" if code == 0 else f"exit code {code}"
