"""Settings declared once, as data: each variable, the value read when it is unset, and its help text.

``from_environment`` reads every default from this table, and the README's configuration table is
checked against it (each variable with its default) by tests, so neither can drift from the code.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from hourtab.core.errors import InvalidInput


@dataclass(frozen=True)
class Setting:
    """``default``: the value read when the variable is unset ("" for none); ``shown``: how the
    documentation writes a default that is computed rather than a plain value."""

    env: str
    default: str
    help: str
    shown: str = ""

    @property
    def documented_default(self) -> str:
        return self.shown or self.default


SETTINGS: tuple[Setting, ...] = (
    Setting("HOURTAB_DATABASE_URL", "",
            "SQLAlchemy URL of the database; `DATABASE_URL` is read when this is unset, and "
            "`postgres://` URLs are accepted (psycopg 3 is used).",
            shown="sqlite:///<data dir>/hourtab.db"),
    Setting("HOURTAB_SECRET_KEY", "",
            "Key that signs sessions and CSRF tokens. Set it when running several hosts.",
            shown="generated once, kept in `<data dir>/secret_key`"),
    Setting("HOURTAB_DATA_DIR", "",
            "Folder for the SQLite database, the secret key, uploads and rendered files.",
            shown="`./instance`"),
    Setting("HOURTAB_HTTPS", "0", "Set to 1 behind HTTPS: session cookies get the Secure flag."),
    Setting("HOURTAB_TRUSTED_PROXIES", "0",
            "Number of reverse proxies in front of the app whose X-Forwarded-* headers are trusted."),
    Setting("HOURTAB_PUBLIC_URL", "http://127.0.0.1:8000",
            "Base URL of the links the CLI prints and the Atom feed carries; when unset, the feed uses the "
            "request's host and `hourtab serve` warns at start-up."),
    Setting("HOURTAB_MAX_UPLOAD_MB", "256", "Largest request body accepted, in MiB (HTTP 413 above)."),
    Setting("HOURTAB_CSV_MAX_MB", "50", "Largest time-tracker CSV accepted, in MiB; refused before parsing."),
    Setting("HOURTAB_CSV_QUEUE_ABOVE_KB", "1024",
            "CSV uploads larger than this, in KiB, are read and imported by a queued job with progress; "
            "smaller ones within the request."),
    Setting("HOURTAB_LOGIN_LIMIT", "10",
            "Failed log-ins allowed per e-mail and per client address in a minute (HTTP 429 above)."),
    Setting("HOURTAB_API_RATE_LIMIT", "120",
            "Calls allowed per API token in a minute (HTTP 429 above, with Retry-After)."),
    Setting("HOURTAB_SESSION_MAX_DAYS", "14",
            "Days a log-in session lives at most; log-out, a password change and \"log out everywhere\" "
            "end it sooner."),
    Setting("HOURTAB_SESSION_IDLE_HOURS", "48", "Hours without a request after which a log-in session ends."),
    Setting("HOURTAB_BLOB_URL", "",
            "Where uploads and rendered files are kept: `s3://bucket/prefix` for an S3-compatible bucket.",
            shown="local folder `<data dir>/blobs`"),
    Setting("HOURTAB_BLOB_ENDPOINT_URL", "",
            "Endpoint of the S3-compatible service for `s3://` blob URLs (MinIO, R2, a moto server).",
            shown="(the AWS default)"),
    Setting("HOURTAB_ARCHIVE_MAX_MB", "2048",
            "Largest expanded size of an uploaded run archive, in MiB; refused before anything is written."),
    Setting("HOURTAB_ARCHIVE_MAX_MEMBERS", "10000",
            "Most files and folders an uploaded run archive may hold; refused from its directory, before "
            "anything is read."),
    Setting("HOURTAB_REDIS_URL", "",
            "Redis URL of the task queue (`redis://host:6379/0`); unset, jobs queue in `<data dir>/queue.db`.",
            shown="(unset: SQLite queue in the data dir)"),
    Setting("HOURTAB_QUEUE_NAME", "hourtab",
            "Name of the task queue (its key prefix in Redis); every app and worker host of one deployment "
            "uses the same."),
    Setting("HOURTAB_WORKER_THREADS", "8",
            "Jobs one worker process runs at once (`hourtab worker` and the consumer `hourtab serve` keeps; "
            "`--threads` overrides it). Syncs mostly wait on trackers, so threads overlap their waits; each "
            "thread may hold one job's memory (a large run's ingest) and a few database connections."),
    Setting("HOURTAB_WORKER_HEAVY_JOBS", "1",
            "Memory-heavy jobs (a W&B run's ingest, an incident PDF's render) one worker process runs at once, "
            "whatever its thread count; the others wait for a slot. Raise it where memory allows."),
    Setting("HOURTAB_JOB_LEASE_S", "60",
            "Seconds a worker holds a running job without renewing it; past that the job is queued again."),
    Setting("HOURTAB_SMTP_URL", "",
            "Where alert e-mails are sent: `smtp://user:pass@host:25`, `smtp+starttls://…:587` or `smtps://…:465`.",
            shown="(unset: no e-mail)"),
    Setting("HOURTAB_MAIL_FROM", "HourTab <hourtab@localhost>",
            "Address alert e-mails come from, as \"<consultant> via HourTab\"; replies go to the consultant "
            "(see docs/operations.md)."),
    Setting("HOURTAB_SYNC_MINUTES", "15",
            "Minutes between two syncs of a tracker connection (each is jittered by ±20 %)."),
    Setting("HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS", "0",
            "Set to 1 to let tracker connections reach private and loopback addresses (a self-hosted Kimai on "
            "the office network); link-local and metadata addresses stay refused."),
    Setting("HOURTAB_SYNC_REQUEST_S", "15",
            "Seconds one request to a tracker may take in all: connect, TLS, headers and body."),
    Setting("HOURTAB_SYNC_ANSWER_MB", "16", "Largest answer read from a tracker, in MiB; a larger one is not read."),
    Setting("HOURTAB_SYNC_ANSWER_DEPTH", "32",
            "Deepest nesting read in a tracker's answer; an entry holding a deeper value is skipped and listed."),
    Setting("HOURTAB_SYNC_BUDGET_S", "40",
            "Seconds one sync may spend reading its tracker; past that it saves nothing and continues at its "
            "next turn."),
    Setting("HOURTAB_SYNC_BUDGET_REQUESTS", "400", "Requests one sync may make, under the same rule."),
    Setting("HOURTAB_SYNC_BUDGET_MB", "128", "MiB one sync may read, under the same rule."),
    Setting("HOURTAB_SYNC_CHECK_S", "5",
            "Seconds the token check of \"Connect\" may take in all, every request included."),
    Setting("HOURTAB_ENCRYPTION_KEY", "",
            "Fernet key(s) that encrypt trackers' API tokens, comma-separated (the first encrypts, all decrypt); "
            "without it the key is derived from the secret key, so changing that makes stored tokens unreadable.",
            shown="(derived from the secret key)"),
)


def default_data_dir() -> Path:
    return Path(os.getcwd()) / "instance"


def _secret_key(data_dir: Path) -> str:
    """Generate the key once and keep it beside the data, readable only by its owner."""
    path = data_dir / "secret_key"
    if path.exists():
        return path.read_text().strip()
    key = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


def _number(env: Mapping[str, str], name: str, cast: Callable[[str], float] = float) -> float:
    try:
        return cast(env[name])
    except ValueError as e:
        raise InvalidInput(f"{name} must be a number, not {env.get(name)!r}.") from e


def _positive(env: Mapping[str, str], name: str) -> float:
    value = _number(env, name)
    if not value > 0:
        raise InvalidInput(f"{name} must be a positive number, not {env.get(name)!r}.")
    return value


#: Most threads one worker process runs (each may hold a few database connections).
MAX_WORKER_THREADS = 64


def worker_threads(env: Mapping[str, str], name: str = "HOURTAB_WORKER_THREADS") -> int:
    value = _number(env, name, int)
    if not 1 <= value <= MAX_WORKER_THREADS:
        raise InvalidInput(f"{name} must be a whole number from 1 to {MAX_WORKER_THREADS}, "
                           f"not {env.get(name)!r}.")
    return int(value)


def _database_url(env: Mapping[str, str], data_dir: Path) -> str:
    url = env.get("HOURTAB_DATABASE_URL") or env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'hourtab.db'}"
    try:
        make_url(url)
    except ArgumentError as e:
        raise InvalidInput("HOURTAB_DATABASE_URL is not a database URL (e.g. sqlite:///path/hourtab.db or "
                           "postgresql://user@host/db).") from e
    return url


DEFAULTS: dict[str, str] = {s.env: s.default for s in SETTINGS}


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """Build the Flask config from ``HOURTAB_*`` variables; nothing is read at import time.

    Every variable unset reads as its default from ``SETTINGS``, the one place defaults are written.
    """
    given = os.environ if environ is None else environ
    env = {**DEFAULTS, **given}
    data_dir = Path(env.get("HOURTAB_DATA_DIR") or default_data_dir()).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    url = _database_url(env, data_dir)
    https = env["HOURTAB_HTTPS"] == "1"
    return {
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": url,
        "SECRET_KEY": env.get("HOURTAB_SECRET_KEY") or _secret_key(data_dir),
        "HTTPS": https,
        "TRUSTED_PROXIES": int(_number(env, "HOURTAB_TRUSTED_PROXIES", int)),
        "PUBLIC_URL": env["HOURTAB_PUBLIC_URL"].rstrip("/"),
        "PUBLIC_URL_SET": bool(given.get("HOURTAB_PUBLIC_URL")),
        "MAX_CONTENT_LENGTH": int(float(env["HOURTAB_MAX_UPLOAD_MB"]) * 1024 * 1024),
        "CSV_MAX_BYTES": int(float(env["HOURTAB_CSV_MAX_MB"]) * 1024 * 1024),
        "CSV_QUEUE_ABOVE_BYTES": int(_number(env, "HOURTAB_CSV_QUEUE_ABOVE_KB") * 1024),
        "LOGIN_LIMIT": int(env["HOURTAB_LOGIN_LIMIT"]),
        "API_RATE_LIMIT": int(_positive(env, "HOURTAB_API_RATE_LIMIT")),
        "SESSION_MAX_DAYS": float(env["HOURTAB_SESSION_MAX_DAYS"]),
        "SESSION_IDLE_HOURS": float(env["HOURTAB_SESSION_IDLE_HOURS"]),
        "BLOB_URL": env["HOURTAB_BLOB_URL"],
        "BLOB_ENDPOINT_URL": env["HOURTAB_BLOB_ENDPOINT_URL"],
        "ARCHIVE_MAX_BYTES": int(_number(env, "HOURTAB_ARCHIVE_MAX_MB") * 1024 * 1024),
        "ARCHIVE_MAX_MEMBERS": int(_number(env, "HOURTAB_ARCHIVE_MAX_MEMBERS", int)),
        "REDIS_URL": env["HOURTAB_REDIS_URL"],
        "QUEUE_NAME": env["HOURTAB_QUEUE_NAME"],
        "WORKER_THREADS": worker_threads(env),
        "WORKER_HEAVY_JOBS": worker_threads(env, "HOURTAB_WORKER_HEAVY_JOBS"),
        "JOB_LEASE_S": _number(env, "HOURTAB_JOB_LEASE_S"),
        "SMTP_URL": env["HOURTAB_SMTP_URL"],
        "MAIL_FROM": env["HOURTAB_MAIL_FROM"],
        "SYNC_MINUTES": _positive(env, "HOURTAB_SYNC_MINUTES"),
        "ENCRYPTION_KEY": env["HOURTAB_ENCRYPTION_KEY"],
        "SYNC_ALLOW_PRIVATE_HOSTS": env["HOURTAB_SYNC_ALLOW_PRIVATE_HOSTS"] == "1",
        "SYNC_REQUEST_S": _positive(env, "HOURTAB_SYNC_REQUEST_S"),
        "SYNC_ANSWER_BYTES": int(_positive(env, "HOURTAB_SYNC_ANSWER_MB") * 1024 * 1024),
        "SYNC_ANSWER_DEPTH": int(_positive(env, "HOURTAB_SYNC_ANSWER_DEPTH")),
        "SYNC_BUDGET_S": _positive(env, "HOURTAB_SYNC_BUDGET_S"),
        "SYNC_BUDGET_REQUESTS": int(_positive(env, "HOURTAB_SYNC_BUDGET_REQUESTS")),
        "SYNC_BUDGET_BYTES": int(_positive(env, "HOURTAB_SYNC_BUDGET_MB") * 1024 * 1024),
        "SYNC_CHECK_S": _positive(env, "HOURTAB_SYNC_CHECK_S"),
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": https,
        "REMEMBER_COOKIE_HTTPONLY": True,
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_SECURE": https,
        "WTF_CSRF_TIME_LIMIT": None,
    }
