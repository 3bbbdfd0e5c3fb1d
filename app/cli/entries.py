"""``hourtab entries remove|restore UPLOAD_ID``: what the import's page does with the entries a
re-export no longer has, on the command line. Removing (or restoring) entries of a closed period
revises it, so that change is printed as a preview and applied only with ``--yes`` (exit 2
otherwise, nothing changed); one that touches no closed period is applied at once."""

from __future__ import annotations

import json
from collections.abc import Callable

import click
from sqlalchemy.orm import Session

from app.cli.context import cli_session
from app.cli.edit import YES_HINT
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.core.errors import NotFound
from hourtab.imports import removal
from hourtab.retainers import changes
from hourtab.timesheets.models import TimeEntry, Upload


def _account(session: Session, upload_id: int, email: str | None) -> accounts.Account:
    upload = session.get(Upload, upload_id)
    account = session.get(accounts.Account, upload.account_id) if upload is not None else None
    if account is None or (email and account.id != accounts.get_account(session, email).id):
        raise NotFound(f"No upload with id {upload_id}" + (f" in the account {email}." if email else "."))
    return account


def _line(entry: TimeEntry) -> str:
    h, m = divmod(entry.duration_s // 60, 60)
    return (f"#{entry.id} {entry.local_date} {entry.client or '(no client)'} / {entry.project or '(no project)'}"
            f" · {entry.description or ''} · {h}:{m:02d}")


def _run(upload_id: int, email: str | None, yes: bool, as_json: bool, verb: tuple[str, str],
         chosen: Callable[[Session, accounts.Account], list[TimeEntry]],
         change: Callable[[Session, accounts.Account, list[int]], int]) -> None:
    """List the chosen entries, apply ``change`` to them through the preview, print what it did."""
    with cli_session() as cx:
        session = cx.session
        account = _account(session, upload_id, email)
        entries = chosen(session, account)
        ids = [e.id for e in entries]
        try:
            with transaction(session):
                _, preview = changes.apply(session, account.id, lambda: change(session, account, ids),
                                               confirm=True if yes else None)
        except changes.NeedsConfirmation as e:
            _print(upload_id, entries, e.preview, as_json, applied=False, verb=verb)
            raise changes.NeedsConfirmation(e.preview, hint=YES_HINT) from None
        _print(upload_id, entries, preview, as_json, applied=True, verb=verb)


def _print(upload_id: int, entries: list[TimeEntry], preview: changes.ChangePreview, as_json: bool, *,
           applied: bool, verb: tuple[str, str]) -> None:
    """Each entry, then the preview's lines (``verb``: the infinitive and the participle)."""
    if as_json:
        click.echo(json.dumps({"upload_id": upload_id, "applied": applied, "entry_ids": [e.id for e in entries],
                               "preview": preview.as_json()}, ensure_ascii=False))
        return
    for entry in entries:
        click.echo(f"{verb[1] if applied else 'would be ' + verb[1]}  {_line(entry)}")
    for line in preview.lines():
        click.echo(line)
    if not entries:
        click.echo(f"Nothing to {verb[0]} in upload {upload_id}.")


@click.group("entries")
def entries_group() -> None:
    """Remove the entries a re-export no longer has, or restore removed ones."""


_UPLOAD = click.argument("upload_id", type=int)
_ACCOUNT = click.option("--account", "email", default=None, help="E-mail of the consultant's account (checked).")
_ENTRY = click.option("--entry", "entry_ids", type=int, multiple=True,
                      help="Only this entry (repeatable; default: every one of the upload).")
_YES = click.option("--yes", is_flag=True, help="Apply a change that revises closed periods (it is previewed otherwise).")
_JSON = click.option("--json", "as_json", is_flag=True,
                     help='Print {"upload_id", "applied", "entry_ids", "preview"} as JSON.')


@entries_group.command("remove")
@_UPLOAD
@_ACCOUNT
@_ENTRY
@_YES
@_JSON
def entries_remove(upload_id: int, email: str | None, entry_ids: tuple[int, ...], yes: bool, as_json: bool) -> None:
    """Remove the entries UPLOAD_ID flagged as no longer in the export (they count until removed)."""
    only = list(entry_ids) or None
    _run(upload_id, email, yes, as_json, ("remove", "removed"),
         lambda s, a: removal.removal_candidates(s, a, upload_id, only).entries,
         lambda s, a, ids: removal.confirm_removal(s, a, upload_id=upload_id, entry_ids=ids))


@entries_group.command("restore")
@_UPLOAD
@_ACCOUNT
@_ENTRY
@_YES
@_JSON
def entries_restore(upload_id: int, email: str | None, entry_ids: tuple[int, ...], yes: bool, as_json: bool) -> None:
    """Restore entries removed from UPLOAD_ID's review: they count again as before."""
    _run(upload_id, email, yes, as_json, ("restore", "restored"),
         lambda s, a: [e for e in removal.removed_entries(s, a, upload_id).entries
                       if not entry_ids or e.id in entry_ids],
         lambda s, a, ids: removal.restore_removed(s, a, upload_id, ids))


commands: list[click.Command] = [entries_group]
