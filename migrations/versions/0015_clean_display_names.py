"""accounts: display names kept on one line without control characters

Revision ID: 0015
Revises: 0010

The settings page saved display names with control characters (sign-up already removed them), and
a name reaches the Atom feed, where one such character makes the document unreadable, and the
``From:`` line of alert e-mails. Names saved that way are cleaned here the way both forms now
clean them (``hourtab.core.values.single_line``, repeated so this file never changes with it).
"""
import re

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0010"
branch_labels = None
depends_on = None

_CONTROLS = re.compile("[\\x00-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069\\ufffe\\uffff\\ud800-\\udfff]")


def _single_line(text: str | None) -> str:
    return " ".join(_CONTROLS.sub("", " ".join((text or "").split())).split())


def upgrade() -> None:
    accounts = sa.table("accounts", sa.column("id", sa.Integer()), sa.column("display_name", sa.String()))
    bind = op.get_bind()
    for account_id, name in bind.execute(sa.select(accounts.c.id, accounts.c.display_name)).all():
        clean = _single_line(name)
        if clean != name:
            bind.execute(accounts.update().where(accounts.c.id == account_id).values(display_name=clean))


def downgrade() -> None:
    """Nothing to undo: the characters removed carried no meaning."""
