"""``hourtab sync connect|run|list|resume|remove``: connect a tracker's API, sync now, list, resume, remove.

``connect`` reads the API token from stdin only (``--token-stdin``), so it never lands in the shell's
history or the process list. ``run`` syncs each connection as a ``sync_run`` job run in this process
(the same runner the workers use, one sync per connection at a time) and prints its counts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from hourtab.sync.clients import TRACKER_NAMES

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from app.cli.context import CliContext
    from hourtab.sync.models import Connection


@click.group("sync")
def sync_group() -> None:
    """Live sync from Toggl Track, Clockify, Harvest and Kimai."""


@sync_group.command("connect")
@click.option("--account", "email", required=True, help="E-mail of the account the entries go to.")
@click.option("--tracker", "tracker_name", required=True, type=click.Choice(TRACKER_NAMES))
@click.option("--token-stdin", is_flag=True, help="Read the API token from stdin (the only way to give it).")
@click.option("--api-url", default=None, help="The API's scheme and host (Kimai: your instance; Clockify: a "
              "regional host); the tracker's public host otherwise.")
@click.option("--workspace", default=None, help="Workspace id, when the token reaches several.")
@click.option("--harvest-account", default=None, help="Harvest's account id (Harvest only).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "tracker", "workspace"} as JSON.')
def connect(email: str, tracker_name: str, token_stdin: bool, api_url: str | None, workspace: str | None,
            harvest_account: str | None, as_json: bool) -> None:
    """Check a tracker's API token and connect it to the account (its first sync reads the history)."""
    from app.cli.context import cli_session
    from app.extensions import sync_limits, token_box
    from hourtab.core import accounts
    from hourtab.core.db import transaction
    from hourtab.sync import service

    if not token_stdin:
        raise click.UsageError("give the token on stdin with --token-stdin (never as an argument)")
    if sys.stdin.isatty():
        raise click.UsageError("--token-stdin reads the token from a pipe or a file, e.g. `hourtab sync connect … "
                               "--token-stdin < token.txt`")
    token = sys.stdin.read()
    with cli_session() as cx:
        account = accounts.get_account(cx.session, email)
        with transaction(cx.session):
            connection = service.connect(cx.session, account, token_box(cx.settings), tracker_name, token,
                                         api_url=api_url, workspace=workspace, harvest_account=harvest_account,
                                         limits=sync_limits(cx.settings))
        shown = {"id": connection.id, "tracker": connection.tracker, "workspace": connection.workspace}
    if as_json:
        click.echo(json.dumps(shown))
    else:
        click.echo(f"Connected {tracker_name} (connection {shown['id']}, workspace {shown['workspace'] or '-'}); "
                   "run `hourtab sync run` or let the workers sync it.")


@sync_group.command("run")
@click.option("--account", "email", default=None, help="Only this account's connections.")
@click.option("--connection", "connection_id", type=int, default=None, help="Only this connection.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome per connection as JSON.")
def run(email: str | None, connection_id: int | None, as_json: bool) -> None:
    """Sync the active connections now and print new / changed / removed / unchanged per connection."""
    from app.cli.context import cli_session
    from hourtab.core import accounts
    from hourtab.core.db import transaction
    from hourtab.core.errors import NotFound
    from hourtab.core.jobs import Job, create_job
    from hourtab.sync import service

    outcomes = []
    with cli_session() as cx, _job_runner(cx) as run_job:
        session = cx.session
        account_id = accounts.get_account(session, email).id if email else None
        chosen = [c for c in service.list_connections(session, account_id)
                  if connection_id is None or c.id == connection_id]
        if connection_id is not None and not chosen:
            raise NotFound(f"Connection {connection_id} not found" + (f" for {email}" if email else "") + ".")
        for connection in chosen:
            if connection.status != "active":
                outcomes.append({"id": connection.id, "tracker": connection.tracker, "status": connection.status,
                                 "error": connection.pause_reason})
                continue
            with transaction(session):
                job = create_job(session, connection.account_id, "sync_run",
                                 {"connection_id": connection.id, "trigger": "cli"})
            run_job(job.id)
            session.expire_all()
            done = session.get_one(Job, job.id)
            outcomes.append(done.result if done.status == "done" else
                            {"id": connection.id, "tracker": connection.tracker,
                             "status": (done.result or {}).get("status", "failed"), "error": done.error})
    if as_json:
        click.echo(json.dumps({"connections": outcomes}, ensure_ascii=False))
    else:
        for o in outcomes:
            counts = ", ".join(f"{o.get(k, 0)} {k}" for k in ("new", "changed", "removed", "unchanged"))
            line = f"connection {o['id']} ({o['tracker']}): {o['status']}"
            click.echo(line + (f": {counts}" if o["status"] == "done" else f": {o.get('error', '')}"))
    if any(o["status"] in ("failed", "refused", "out_of_budget") for o in outcomes):
        click.get_current_context().exit(1)


@contextmanager
def _job_runner(cx: CliContext) -> Iterator[Callable[[str], object]]:
    """What runs a ``sync_run`` job here: the workers' job runner, with the same handler.

    With e-mail set up a sync may queue an alert check, and only the app's queue can hand that to the
    workers, so the app is built then (seconds); otherwise the handler is made from the settings alone.
    """
    if cx.settings.get("SMTP_URL"):
        from app.cli.context import queue_app

        with queue_app() as app:
            yield app.extensions["hourtab.queue"].runner.run
        return
    from sqlalchemy import Engine

    from app.extensions import token_box
    from hourtab.core.db import make_sessionmaker
    from hourtab.core.jobrunner import JobRunner, this_worker
    from hourtab.sync.handler import sync_handler, time_limits
    from hourtab.sync.limits import Limits

    _, limit_s = time_limits(Limits.from_settings(cx.settings))
    bind = cx.session.get_bind()
    yield JobRunner(make_sessionmaker(bind if isinstance(bind, Engine) else bind.engine),
                    {"sync_run": sync_handler(cx.settings, token_box(cx.settings))},
                    worker=this_worker(), lease_s=float(cx.settings["JOB_LEASE_S"]),
                    time_limits={"sync_run": limit_s}).run


@sync_group.command("list")
@click.option("--account", "email", default=None, help="Only this account's connections.")
@click.option("--json", "as_json", is_flag=True, help="Print the connections as JSON.")
def list_command(email: str | None, as_json: bool) -> None:
    """The connections: tracker, workspace, status, last sync and its result (never the token)."""
    from sqlalchemy import select

    from app.cli.context import cli_session
    from hourtab.core import accounts
    from hourtab.core.accounts import Account
    from hourtab.sync import service

    with cli_session() as cx:
        account_id = accounts.get_account(cx.session, email).id if email else None
        emails = dict(cx.session.execute(select(Account.id, Account.email)).all())
        rows = [{"id": c.id, "account": emails.get(c.account_id, ""), "tracker": c.tracker, "workspace": c.workspace,
                 "api_url": c.api_url, "user": c.tracker_user, "status": c.status, "token": c.token_hint,
                 "last_sync_at": c.last_sync_at.isoformat() if c.last_sync_at else None,
                 "next_sync_at": c.next_sync_at.isoformat() if c.next_sync_at else None,
                 "last_result": {k: c.last_result.get(k, 0) for k in ("new", "changed", "removed", "unchanged")}
                 if c.last_result else {}, "error": c.last_error or c.pause_reason}
                for c in service.list_connections(cx.session, account_id)]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        click.echo("No connections.")
    for r in rows:
        last = f"last sync {r['last_sync_at']}" if r["last_sync_at"] else "never synced"
        click.echo(f"{r['id']}\t{r['account']}\t{r['tracker']}\t{r['workspace'] or '-'}\t{r['status']}\t"
                   f"token {r['token']}\t{last}" + (f"\t{r['error']}" if r["error"] else ""))


def _owned_connection(session: Session, email: str | None, connection_id: int) -> Connection:
    """The connection, of the account named (when one is): refused as not found otherwise."""
    from hourtab.core import accounts
    from hourtab.core.errors import NotFound
    from hourtab.sync.models import Connection

    connection = session.get(Connection, connection_id)
    if connection is None or (email and connection.account_id != accounts.get_account(session, email).id):
        raise NotFound(f"Connection {connection_id} not found" + (f" for {email}" if email else "") + ".")
    return connection


@sync_group.command("resume")
@click.argument("connection_id", type=int)
@click.option("--account", "email", default=None, help="The account the connection belongs to (a check).")
@click.option("--token-stdin", is_flag=True, help="Read a new API token from stdin (replaces the stored one).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "status"} as JSON.')
def resume(connection_id: int, email: str | None, token_stdin: bool, as_json: bool) -> None:
    """Sync a paused connection on schedule again (at once), optionally with a new token."""
    from app.cli.context import cli_session
    from app.extensions import token_box
    from hourtab.core.accounts import Account
    from hourtab.core.db import transaction
    from hourtab.sync import service

    token = None
    if token_stdin:
        if sys.stdin.isatty():
            raise click.UsageError("--token-stdin reads the token from a pipe or a file")
        token = sys.stdin.read()
    with cli_session() as cx:
        connection = _owned_connection(cx.session, email, connection_id)
        with transaction(cx.session):
            owner = cx.session.get_one(Account, connection.account_id)
            connection = service.resume(cx.session, owner, connection_id, token_box(cx.settings), token)
        shown = {"id": connection.id, "status": connection.status}
    click.echo(json.dumps(shown) if as_json else f"Connection {shown['id']} resumed; it syncs at the next tick "
                                                 "of the workers, or now with `hourtab sync run`.")


@sync_group.command("remove")
@click.argument("connection_id", type=int)
@click.option("--account", "email", default=None, help="The account the connection belongs to (a check).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "removed": true} as JSON.')
def remove(connection_id: int, email: str | None, as_json: bool) -> None:
    """Remove a connection and its token (a sync of it that is running stops); synced entries stay."""
    from app.cli.context import cli_session
    from hourtab.core.accounts import Account
    from hourtab.core.db import transaction
    from hourtab.sync import service

    with cli_session() as cx:
        connection = _owned_connection(cx.session, email, connection_id)
        with transaction(cx.session):
            service.remove(cx.session, cx.session.get_one(Account, connection.account_id), connection_id)
    click.echo(json.dumps({"id": connection_id, "removed": True}) if as_json else
               f"Connection {connection_id} removed and its token deleted; the entries it synced stay.")


commands: list[click.Command] = [sync_group]
