"""``hourtab token create|list|revoke``: personal access tokens for the API (``/api/v1``).

``create`` prints the token once; only its SHA-256 is stored, so it cannot be shown again (make
another and revoke the lost one).
"""

from __future__ import annotations

import json

import click

from app.cli.context import cli_session
from hourtab.core import accounts, apitokens
from hourtab.core.db import transaction

ACCOUNT = click.option("--account", "email", required=True, help="E-mail of the account the token acts as.")


@click.group("token")
def token_group() -> None:
    """Personal access tokens for the API (Authorization: Bearer)."""


@token_group.command("create")
@ACCOUNT
@click.option("--name", default="command line", show_default=True,
              help="What the token is for, shown in the list (e.g. “invoicing script”).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "token"} as JSON.')
def token_create(email: str, name: str, as_json: bool) -> None:
    """Make a token and print it (shown this once: keep it in your tool's secret store)."""
    with cli_session() as cx, transaction(cx.session):
        account = accounts.get_account(cx.session, email)
        row, token = apitokens.create(cx.session, account.id, name)
    if as_json:
        click.echo(json.dumps({"id": row.id, "token": token}))
        return
    click.echo(f"Created API token {row.id} ({row.name}) for {account.email}. It is shown only now:")
    click.echo(token)


@token_group.command("list")
@ACCOUNT
@click.option("--json", "as_json", is_flag=True, help="Print the tokens as a JSON list.")
def token_list(email: str, as_json: bool) -> None:
    """The account's tokens: live ones first, with when each was last used."""
    with cli_session() as cx:
        account = accounts.get_account(cx.session, email)
        tokens = [t.as_dict() for t in apitokens.list_tokens(cx.session, account.id)]
    if as_json:
        click.echo(json.dumps(tokens, ensure_ascii=False))
        return
    if not tokens:
        click.echo(f"{account.email} has no API tokens; `hourtab token create --account {account.email}` makes one.")
    for t in tokens:
        state = f"revoked {t['revoked_at'][:16]}" if t["revoked_at"] else "live"
        used = f"last used {t['last_used_at'][:16]}" if t["last_used_at"] else "never used"
        click.echo(f"{t['id']:>5}  {t['hint']:<12}  {t['name'][:40]:<40}  created {t['created_at'][:10]}  "
                   f"{used}  {state}")


@token_group.command("revoke")
@click.argument("token_id", type=int)
@ACCOUNT
def token_revoke(token_id: int, email: str) -> None:
    """Revoke a token: a call with it is refused (401) from now on."""
    with cli_session() as cx, transaction(cx.session):
        account = accounts.get_account(cx.session, email)
        row = apitokens.revoke(cx.session, account.id, token_id)
    click.echo(f"Revoked API token {row.id} ({row.name}).")


commands: list[click.Command] = [token_group]
