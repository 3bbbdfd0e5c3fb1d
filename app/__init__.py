"""The HourTab Flask application: a thin web layer over the ``hourtab`` and ``incidents`` packages."""

from __future__ import annotations

import os
from typing import Any

from flask import Flask

from hourtab.core.resources import pages_dir


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Build an app: defaults, then the environment (``HOURTAB_*``), then ``test_config``."""
    # Imported here, not at the top: every ``app.*`` import (the CLI's included) runs this package
    # first, and only building an app needs the web layer.
    from app import auth, db, demo, errors, extensions, jobs, security, templating  # noqa: PLC0415
    from app.api import bp as api_bp  # noqa: PLC0415
    from app.config import from_environment  # noqa: PLC0415
    from app.consultant import bp as consultant_bp  # noqa: PLC0415
    from app.public import bp as public_bp  # noqa: PLC0415

    test_config = test_config or {}
    app = Flask(__name__, template_folder=str(pages_dir()), static_folder="static")
    # HOURTAB_* keys in test_config stand in for environment variables; the rest are Flask config.
    env = {**os.environ, **{k: str(v) for k, v in test_config.items() if k.startswith("HOURTAB_")}}
    app.config.update(from_environment(env))
    app.config.update({k: v for k, v in test_config.items() if not k.startswith("HOURTAB_")})

    extensions.init_app(app)
    db.init_app(app)
    security.init_app(app)
    auth.init_app(app)
    errors.init_app(app)
    jobs.init_app(app)
    demo.init_app(app)

    templating.register(app)
    app.register_blueprint(public_bp)
    app.register_blueprint(consultant_bp)
    app.register_blueprint(api_bp)
    return app
