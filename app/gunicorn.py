"""Run the app under gunicorn from Python, so ``hourtab serve`` needs no separate config file."""

from __future__ import annotations

import os
import sys
from typing import Any

from gunicorn.app.base import BaseApplication

from app import create_app
from app.public.links import startup_warnings


class _Server(BaseApplication):
    def __init__(self, options: dict[str, object]) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:  # a Flask app; gunicorn's stubs name a WSGI type Flask's own stubs do not match
        app = create_app()
        for warning in startup_warnings(app):
            app.logger.warning(warning)
        return app


def _leave(arbiter: object, worker: object) -> None:
    """A worker leaves here, once gunicorn has closed what it owns. Without this it would go on to
    unwind the stack it was forked on (``hourtab serve``'s: its ``finally``, click's exit) and
    finalise every module the app imported, which took seconds of a shutdown for nothing."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def run(host: str, port: int, workers: int) -> None:
    _Server({
        "bind": f"{host}:{port}",
        "workers": workers,
        "accesslog": "-",
        "timeout": 120,
        "graceful_timeout": 10,
        "forwarded_allow_ips": "127.0.0.1",
        # gunicorn's control socket has one default path per user ($XDG_RUNTIME_DIR/gunicorn.ctl),
        # so two servers on one host would share it; HourTab is managed by signals, not gunicornc.
        "control_socket_disable": True,
        "worker_exit": _leave,
    }).run()
