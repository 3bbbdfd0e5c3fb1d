"""``hourtab serve``, ``hourtab db upgrade``, ``hourtab user create|set-plan``."""

from __future__ import annotations

import sys

import click

from app.cli.context import cli_session, settings
from hourtab import accounts
from hourtab.db import transaction


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64),
              help="gunicorn worker processes.")
@click.option("--demo", is_flag=True, help="Create a demo account with sample data and print its login.")
def serve(host: str, port: int, workers: int, demo: bool) -> None:
    """Apply pending migrations and serve the app with gunicorn."""
    from app.gunicorn import run
    from app.migrate import upgrade

    upgrade(str(settings()["DATABASE_URL"]))
    if demo:
        from app.demo import load_demo

        with cli_session() as cx:
            email, password = load_demo(cx.session, cx.blobs)
        click.echo(f"Demo login: {email} / {password}")
    click.echo(f"HourTab listening on http://{host}:{port}/  (health: http://{host}:{port}/healthz)")
    sys.stdout.flush()
    run(host, port, workers)


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
def user_create(email: str, plan: str, password_stdin: bool, name: str) -> None:
    """Create an account (the password is prompted for unless --password-stdin)."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    with cli_session() as cx, transaction(cx.session):
        account = accounts.create_account(cx.session, email, password, plan=plan, display_name=name)
        click.echo(f"Created {account.email} ({account.plan} plan, id {account.id}).")


@user_group.command("set-plan")
@click.argument("email")
@click.argument("plan", type=click.Choice([p.value for p in accounts.Plan]))
def user_set_plan(email: str, plan: str) -> None:
    """Change an account's plan (free: 1 retainer, pro: 10)."""
    with cli_session() as cx, transaction(cx.session):
        account = accounts.set_plan(cx.session, email, plan)
        click.echo(f"{account.email} is now on the {account.plan} plan.")


