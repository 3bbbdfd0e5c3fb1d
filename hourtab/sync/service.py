"""Connections as the Settings pages and the CLI see them: connect, choose a workspace, pause, resume,
remove, and what the schedule needs (which are due, one sync at a time per connection).

Services take the session and never commit. The token is checked against the tracker before anything
is stored, is stored only sealed (``token_box``), and leaves with the connection.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.db import changed_rows, utcnow
from hourtab.core.jobs import Job
from hourtab.core.scoping import get_owned, select_owned
from hourtab.retainers.models import Retainer
from hourtab.retainers.periods import local_date, periods_through
from hourtab.sync.clients import FetchPlan, Identity, Tracker, open_api, tracker
from hourtab.sync.errors import (
    AlreadyConnected,
    BadResponse,
    ChooseWorkspace,
    InvalidConnection,
    TrackerRefused,
)
from hourtab.sync.limits import Budget, Limits, current
from hourtab.sync.models import Connection
from hourtab.sync.reach import Reach
from hourtab.sync.token_box import TokenBox, clean_token, hint
from hourtab.sync.transport import Api
from hourtab.timesheets.models import Upload
from hourtab.timesheets.zone import forget_tracker_zone, remember_tracker_zone

#: Hours between full re-reads (deletions and edits outside the window, retainers created later).
FULL_EVERY = dt.timedelta(hours=24)
#: An increment cursor older than this is not trusted (Toggl serves ``since`` for a few months only).
MAX_SINCE_AGE = dt.timedelta(days=60)
#: How far back a full read goes when the account has no retainer yet.
DEFAULT_HISTORY = dt.timedelta(days=90)
#: When no retainer has an open period, the window is the last month.
DEFAULT_WINDOW = dt.timedelta(days=31)
#: The schedule's spread: each next sync is at the interval ± this fraction, so accounts drift apart.
JITTER = 0.2


def clean_api_url(url: str | None, chosen: Tracker, limits: Limits | None = None) -> str:
    """The API's scheme and host (and path prefix) as given, or "" for the tracker's public host.

    Only a URL a connection may reach is accepted (``reach``); its addresses are checked again on
    every request."""
    url = (url or "").strip()
    if not url:
        if chosen.needs_url:
            raise InvalidConnection(f"{chosen.label} is self-hosted: give its URL (e.g. https://kimai.example.com).")
        return ""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise InvalidConnection("The API URL must look like https://host (scheme and host).")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise InvalidConnection("The API URL must be a scheme and a host only (no password, query or #part).")
    reach = Reach(hosts=chosen.hosts, allow_private=current(limits).allow_private)
    must_use_https = InvalidConnection("The API URL must use https: the token travels with every request.")
    if parts.scheme == "http" and not reach.allow_private:
        raise must_use_https
    cleaned = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    reach.check_url(cleaned)
    if parts.scheme == "http" and not reach.private_host(parts.hostname, current(limits).check_s):
        raise must_use_https
    return cleaned


def base_url(connection: Connection) -> str:
    return connection.api_url or tracker(connection.tracker).default_url


def _zone(name: str | None, fallback: str) -> str:
    try:
        return ZoneInfo(name).key if name else fallback
    except (ZoneInfoNotFoundError, ValueError):
        return fallback


def _choose(identity: Identity, chosen: Tracker, workspace: str) -> str:
    if chosen.name == "kimai":
        return ""
    if workspace:
        listed = [w for w, _ in identity.workspaces]
        if listed and workspace not in listed:
            raise InvalidConnection(f"{chosen.label} workspace {workspace} is not one this token reaches "
                                    f"({', '.join(listed)}).")
        return workspace
    if len(identity.workspaces) > 1:
        raise ChooseWorkspace(f"This {chosen.label} token reaches {len(identity.workspaces)} workspaces: "
                              f"{', '.join(w for w, _ in identity.workspaces)}; choose one (--workspace ID).",
                              identity.workspaces)
    if identity.workspaces:
        return identity.workspaces[0][0]
    if identity.default_workspace:
        return identity.default_workspace
    raise InvalidConnection(f"{chosen.label} names no workspace for this token; give one (--workspace ID).")


def connect(session: Session, account: Account, box: TokenBox, tracker_name: str, token: str, *,
            api_url: str | None = None, workspace: str | None = None, harvest_account: str | None = None,
            wait_for_choice: bool = False, api: Api | None = None, limits: Limits | None = None) -> Connection:
    """Check the token with the tracker and store the connection (sealed token), due to sync at once.

    The check runs under ``limits.check_s`` in all (every request, connect, TLS and body included), so
    a slow tracker cannot hold the web request that asked. With ``wait_for_choice`` a token that
    reaches several workspaces gives a connection waiting for the consultant's choice (the web form);
    without, :class:`ChooseWorkspace` lists them (the CLI).
    """
    chosen = tracker(tracker_name)
    token = clean_token(token)
    limits = current(limits)
    url = clean_api_url(api_url, chosen, limits)
    workspace = (workspace or "").strip()
    if chosen.needs_account:
        workspace = (harvest_account or workspace or "").strip()
        if not workspace.isdigit():
            raise InvalidConnection("Harvest needs its account id (--harvest-account ID, a number shown under "
                                    "Developers in Harvest).")
    if len(workspace) > 100:
        raise InvalidConnection("The workspace id is too long.")
    client = api or open_api(chosen, url or chosen.default_url, token, workspace, limits,
                             Budget(limits, seconds=limits.check_s, purpose="check"))
    try:
        identity, workspace, choices = _identify(client, chosen, workspace, wait_for_choice)
    finally:
        if api is None:
            client.close()
    _refuse_duplicate(session, account.id, chosen.name, url, workspace)
    zone = _zone(identity.timezone, account.timezone or "UTC")
    # The zone on the upload row says which wall clock the tracker's own exports show (``imports.synced``).
    upload = Upload(account_id=account.id, filename=f"{chosen.label} (live sync)", size_bytes=0,
                    sha256=hashlib.sha256(b"").hexdigest(), status="imported", format=f"{chosen.name}-api",
                    created_by=f"sync:{chosen.name}", explanation=f"Entries synced from the {chosen.label} API.",
                    options={"timezone": zone})
    session.add(upload)
    session.flush()
    connection = Connection(account_id=account.id, tracker=chosen.name, api_url=url, workspace=workspace,
                            tracker_user_id=identity.user_id[:100], tracker_user=identity.user_name[:200],
                            timezone=zone,
                            token_sealed=box.seal(token), token_hint=hint(token),
                            status="choose_workspace" if choices else "active", choices=choices,
                            upload_id=upload.id, next_sync_at=None if choices else utcnow())
    session.add(connection)
    session.flush()
    profile_zone = _zone(identity.timezone, "")
    if profile_zone:  # the zone its CSV exports are written in (``timesheets.zone``)
        remember_tracker_zone(session, account.id, chosen.csv_format, profile_zone, chosen.label, identity.user_name)
    return connection


def _identify(client: Api, chosen: Tracker, workspace: str, wait_for_choice: bool
              ) -> tuple[Identity, str, list]:
    """Who the token is, and the workspace to read (or the choices to offer)."""
    identity = chosen.identify(client, workspace)
    choices: list = []
    try:
        workspace = _choose(identity, chosen, workspace)
    except ChooseWorkspace as e:
        if not wait_for_choice:
            raise
        choices, workspace = [list(c) for c in e.choices], ""
    if workspace and chosen.name == "toggl":
        try:   # a workspace the token cannot read is refused now, not at every sync
            client.get(f"/api/v9/workspaces/{workspace}/clients")
        except (TrackerRefused, BadResponse) as e:
            raise InvalidConnection(f"{chosen.label} workspace {workspace} cannot be read with this token.") from e
    return identity, workspace, choices


def _refuse_duplicate(session: Session, account_id: int, name: str, url: str, workspace: str) -> None:
    existing = session.scalar(select(Connection.id).where(
        Connection.account_id == account_id, Connection.tracker == name, Connection.api_url == url,
        Connection.workspace == workspace))
    if existing is not None:
        raise AlreadyConnected(f"This {tracker(name).label} workspace is already connected (connection {existing}).")


def choose_workspace(session: Session, account: Account, connection_id: int, workspace: str) -> Connection:
    connection = get_connection(session, account.id, connection_id)
    listed = [c[0] for c in connection.choices]
    if connection.status != "choose_workspace" or workspace not in listed:
        raise InvalidConnection("Choose one of the workspaces listed for this connection.")
    _refuse_duplicate(session, account.id, connection.tracker, connection.api_url, workspace)
    connection.workspace, connection.choices, connection.status = workspace, [], "active"
    connection.next_sync_at, connection.updated_at = utcnow(), utcnow()
    session.flush()
    return connection


def list_connections(session: Session, account_id: int | None = None) -> list[Connection]:
    query = select(Connection) if account_id is None else select_owned(Connection, account_id)
    return list(session.scalars(query.order_by(Connection.id)))


def get_connection(session: Session, account_id: int, connection_id: int) -> Connection:
    return get_owned(session, Connection, account_id, connection_id)


def pause(session: Session, account: Account, connection_id: int) -> Connection:
    connection = get_connection(session, account.id, connection_id)
    if connection.status == "active":
        connection.status, connection.pause_reason = "paused", "Paused by you."
        connection.next_sync_at, connection.updated_at = None, utcnow()
        session.flush()
    return connection


def resume(session: Session, account: Account, connection_id: int, box: TokenBox | None = None,
           token: str | None = None) -> Connection:
    """Sync on schedule again (at once); a new token replaces the stored one."""
    connection = get_connection(session, account.id, connection_id)
    if connection.status == "choose_workspace":
        raise InvalidConnection("Choose the workspace first.")
    if token:
        if box is None:
            raise ValueError("a new token needs the token box")
        token = clean_token(token)
        connection.token_sealed, connection.token_hint = box.seal(token), hint(token)
    connection.status, connection.pause_reason, connection.failures = "active", "", 0
    connection.next_sync_at, connection.updated_at = utcnow(), utcnow()
    session.flush()
    return connection


def remove(session: Session, account: Account, connection_id: int) -> None:
    """Delete the connection and its token. Entries already synced stay: they are hours worked."""
    connection = get_connection(session, account.id, connection_id)
    session.execute(delete(Connection).where(Connection.id == connection.id))
    session.expunge(connection)
    if not session.scalar(select_owned(Connection, account.id).where(Connection.tracker == connection.tracker)
                          .limit(1)):
        forget_tracker_zone(session, account.id, tracker(connection.tracker).csv_format)
    session.flush()


# --- what a sync reads --------------------------------------------------------------------------

def _today(connection: Connection, now: dt.datetime) -> dt.date:
    return local_date(now, ZoneInfo(connection.timezone))


def window_start(session: Session, account_id: int, now: dt.datetime, today: dt.date) -> dt.date:
    """First day of the earliest open period of the account's active retainers (the window re-read on
    every sync); the last month when there is none."""
    starts = []
    for retainer in session.scalars(select(Retainer).where(Retainer.account_id == account_id,
                                                           Retainer.active.is_(True))):
        terms = retainer.terms()
        starts.append(min(periods_through(terms, local_date(now, terms.tz))[-1].start, today))
    return min(starts) if starts else today - DEFAULT_WINDOW


def history_start(session: Session, account_id: int, today: dt.date) -> dt.date:
    first = session.scalar(select(Retainer.start_date).where(Retainer.account_id == account_id)
                           .order_by(Retainer.start_date).limit(1))
    return min(first, today) if first is not None else today - DEFAULT_HISTORY


def _when(value: object) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def plan_for(session: Session, connection: Connection, now: dt.datetime) -> FetchPlan:
    """What this sync reads: the open periods and what changed since the last one, or (first, then once
    a day) everything since the earliest retainer started."""
    today = _today(connection, now)
    since, full_at = _when(connection.cursor.get("since")), _when(connection.cursor.get("full_at"))
    full = full_at is None or since is None or now - full_at >= FULL_EVERY or now - since > MAX_SINCE_AGE
    window = window_start(session, connection.account_id, now, today)
    first = min(history_start(session, connection.account_id, today), window) if full else window
    return FetchPlan(full=full, first_day=first, last_day=today + dt.timedelta(days=1), since=None if full else since,
                     workspace=connection.workspace, user_id=connection.tracker_user_id,
                     user_name=connection.tracker_user, zone=connection.timezone,
                     names=connection.cursor.get("names") or {})


# --- the schedule -------------------------------------------------------------------------------

def next_sync(now: dt.datetime, minutes: float, rng: random.Random | None = None) -> dt.datetime:
    """The interval from now, give or take ``JITTER`` of it."""
    spread = (rng or random).uniform(1 - JITTER, 1 + JITTER)
    return now + dt.timedelta(minutes=minutes * spread)


def due(session: Session, now: dt.datetime, limit: int = 500) -> list[tuple[int, dt.datetime]]:
    """(id, next_sync_at) of active connections whose next sync time has come, oldest first."""
    rows = session.execute(select(Connection.id, Connection.next_sync_at)
                           .where(Connection.status == "active", Connection.next_sync_at <= now)
                           .order_by(Connection.next_sync_at).limit(limit))
    return [(i, at) for i, at in rows if at is not None]    # never None past the filter


def reserve(session: Session, connection_id: int, expected: dt.datetime, then: dt.datetime) -> bool:
    """Move the next sync time forward only if nobody did since we read it: the one who moves it queues."""
    return bool(changed_rows(session, update(Connection).where(
        Connection.id == connection_id, Connection.status == "active", Connection.next_sync_at == expected)
        .values(next_sync_at=then)))


def pending_job(session: Session, connection: Connection) -> Job | None:
    """The sync job already queued or running for this connection, if any."""
    if not connection.last_job_id:
        return None
    job = session.get(Job, connection.last_job_id)
    return job if job is not None and job.status in ("queued", "running") else None


def claim(session: Session, connection_id: int, job_id: str, now: dt.datetime) -> bool:
    """Take the connection for this job; refused while another job holding it still has a live lease."""
    live = select(Job.id).where(Job.status == "running", Job.lease_until > now, Job.id != job_id)
    return bool(changed_rows(session, update(Connection).where(
        Connection.id == connection_id,
        or_(Connection.lock_job_id.is_(None), Connection.lock_job_id == job_id, Connection.lock_job_id.not_in(live)))
        .values(lock_job_id=job_id)))


def prune_jobs(session: Session, now: dt.datetime, keep: dt.timedelta = dt.timedelta(days=7),
               limit: int = 5000) -> int:
    """Delete done sync jobs older than ``keep``: a connection makes about a hundred a day, and what the
    pages show of the last one is kept on the connection itself."""
    old = (select(Job.id).where(Job.kind == "sync_run", Job.status == "done", Job.finished_at < now - keep)
           .limit(limit))
    return changed_rows(session, delete(Job).where(Job.id.in_(old)))


def release_connection(session: Session, connection_id: int, job_id: str) -> None:
    """Give back the connection ``claim`` took for ``job_id`` (a no-op when another job holds it)."""
    session.execute(update(Connection).where(Connection.id == connection_id, Connection.lock_job_id == job_id)
                    .values(lock_job_id=None))
