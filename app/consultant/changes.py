"""Every change that can rewrite a closed period goes through here: run, previewed, confirmed.

A form posts its change; ``run_change`` runs it through ``hourtab.retainers.changes.apply``. A change
that touches no closed period is kept at once. One that revises a closed period is rolled back and
answered with its preview (entries that move, closed periods was → now) and a form that posts the
very same fields again with the preview's digest: confirming keeps exactly what was shown, and a
change whose effect differs by then is shown again instead of being kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from flask import render_template, request
from sqlalchemy.orm import Session

from app.auth import account
from app.db import get_db
from hourtab.core.accounts import Account
from hourtab.core.db import transaction
from hourtab.retainers import changes

T = TypeVar("T")
#: The form field a confirmation posts the preview's digest in.
CONFIRM_FIELD = "confirm_change"


@dataclass(frozen=True)
class Applied(Generic[T]):
    result: T
    preview: changes.ChangePreview


def run_change(change: Callable[[Session, Account], T], *, title: str, cancel: str,
               moves: bool = True) -> Applied[T] | tuple:
    """Apply ``change(db, account)`` in one transaction, or answer its preview page (nothing kept).

    ``moves=False``: the change sends no entry elsewhere (``changes.apply`` then skips reading every
    entry of the account twice to find where they went)."""
    db = get_db()
    try:
        with transaction(db):
            me = db.merge(account())
            result, preview = changes.apply(db, me.id, lambda: change(db, me),
                                            confirm=request.form.get(CONFIRM_FIELD) or None, moves=moves)
    except changes.NeedsConfirmation as e:
        return preview_page(e, title, cancel)
    return Applied(result, preview)


def _resent_fields() -> list[tuple[str, str]]:
    """The posted fields, repeated ones included, to post again on confirming (not the token or digest)."""
    return [(k, v) for k, values in request.form.lists() if k not in ("csrf_token", CONFIRM_FIELD) for v in values]


def preview_page(error: changes.NeedsConfirmation, title: str, cancel: str) -> tuple:
    """The preview with its confirm form; 200, as a page that asks (409 when the effect changed)."""
    page = render_template("consultant/changes/preview.html", preview=error.preview, stale=error.stale,
                           title=title, cancel=cancel, fields=_resent_fields(), action=request.full_path.rstrip("?"),
                           confirm_field=CONFIRM_FIELD)
    return page, 409 if error.stale else 200
