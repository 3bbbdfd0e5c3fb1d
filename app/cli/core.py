"""``hourtab serve``, ``hourtab db upgrade``, ``hourtab user create|set-plan``."""

from __future__ import annotations

import sys

import click

from app.cli.context import cli_session, queue_app, settings
from hourtab.core import accounts
from hourtab.core.db import transaction


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64),
              help="gunicorn worker processes.")
@click.option("--demo", is_flag=True, help="Create a demo account with sample data and print its login.")
@click.option("--queue-worker/--no-queue-worker", default=True, show_default=True,
              help="Also run a job consumer in a child process (turn off on app hosts when "
                   "`hourtab worker` runs elsewhere).")
def serve(host: str, port: int, workers: int, demo: bool, queue_worker: bool) -> None:
    """Apply pending migrations and serve the app with gunicorn (and a job consumer)."""
    from app.gunicorn import run
    from app.jobs.supervisor import Supervisor
    from app.migrate import upgrade

    url = str(settings()["DATABASE_URL"])
    upgrade(url)
    if demo:
        with cli_session() as cx:
            if queue_worker:  # the consumer below loads the samples; the page shows the job's progress
                from app.demo import queue_demo

                with queue_app() as app:
                    email, password, job_id = queue_demo(cx.session, app.extensions["hourtab.queue"].enqueue)
                click.echo(f"Demo login: {email} / {password}  "
                           f"(sample data loading: http://{host}:{port}/jobs/{job_id})")
            else:
                from app.demo import load_demo

                email, password = load_demo(cx.session, cx.blobs)
                click.echo(f"Demo login: {email} / {password}")
    click.echo(f"HourTab listening on http://{host}:{port}/  (health: http://{host}:{port}/healthz)")
    sys.stdout.flush()
    consumer = Supervisor(database_url=url) if queue_worker else None
    if consumer is not None:
        consumer.start()
    try:
        run(host, port, workers)
    finally:
        if consumer is not None:
            consumer.stop()


@click.group("db")
def db_group() -> None:
    """Database maintenance."""


@db_group.command("upgrade")
def db_upgrade() -> None:
    """Apply pending migrations to the configured database."""
    from app.migrate import upgrade

    url = str(settings()["DATABASE_URL"])
    upgrade(url)
    click.echo(f"Database is up to date ({_redacted(url)}).")


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


@click.group("user")
def user_group() -> None:
    """Manage consultant accounts."""


@user_group.command("create")
@click.argument("email")
@click.option("--plan", type=click.Choice([p.value for p in accounts.Plan]), default="free", show_default=True)
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@click.option("--name", default="", help="Display name shown to clients.")
@click.option("--timezone", default="UTC", show_default=True,
              help="IANA zone where the consultant works (exports are read on this clock).")
def user_create(email: str, plan: str, password_stdin: bool, name: str, timezone: str) -> None:
    """Create an account (the password is prompted for unless --password-stdin)."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    with cli_session() as cx, transaction(cx.session):
        account = accounts.create_account(cx.session, email, password, plan=plan, display_name=name,
                                          timezone=timezone)
        click.echo(f"Created {account.email} ({account.plan} plan, {account.timezone}, id {account.id}).")


@user_group.command("set-plan")
@click.argument("email")
@click.argument("plan", type=click.Choice([p.value for p in accounts.Plan]))
def user_set_plan(email: str, plan: str) -> None:
    """Change an account's plan (free: 1 retainer, pro: 10)."""
    with cli_session() as cx, transaction(cx.session):
        account = accounts.set_plan(cx.session, email, plan)
        click.echo(f"{account.email} is now on the {account.plan} plan.")


