"""accounts and alert subscriptions: display names on one line, subscription addresses in one spelling

Revision ID: 0015
Revises: 0010

The settings page saved display names with control characters (sign-up already removed them), and
a name reaches the Atom feed, where one such character makes the document unreadable, and the
``From:`` line of alert e-mails. Names saved that way are cleaned here the way both forms now
clean them (``hourtab.core.values.single_line``, repeated so this file never changes with it).

Subscriptions now keep the address as log-ins do (``hourtab.core.accounts.normalize_email``:
NFKC, IDNA, case-folded); rows written before are rewritten the same way, and where two rows of
one retainer become one address the confirmed (else the older) one is kept, so nobody gets an
alert twice.
"""
import re
import unicodedata

import sqlalchemy as sa
from alembic import op
from email_validator import EmailNotValidError, validate_email

revision = "0015"
down_revision = "0011"
branch_labels = None
depends_on = None

_CONTROLS = re.compile("[\\x00-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069\\ufffe\\uffff\\ud800-\\udfff]")


def _single_line(text: str | None) -> str:
    return " ".join(_CONTROLS.sub("", " ".join((text or "").split())).split())


def _address(email: str) -> str:
    text = unicodedata.normalize("NFKC", (email or "").strip())
    try:
        text = validate_email(text, check_deliverability=False).normalized
    except EmailNotValidError:
        return email                      # never accepted as such; left as it is
    return unicodedata.normalize("NFKC", text.casefold())


def upgrade() -> None:
    bind = op.get_bind()
    accounts = sa.table("accounts", sa.column("id", sa.Integer()), sa.column("display_name", sa.String()))
    for account_id, name in bind.execute(sa.select(accounts.c.id, accounts.c.display_name)).all():
        clean = _single_line(name)
        if clean != name:
            bind.execute(accounts.update().where(accounts.c.id == account_id).values(display_name=clean))

    subs = sa.table("alert_subscriptions", sa.column("id", sa.Integer()), sa.column("retainer_id", sa.Integer()),
                    sa.column("email", sa.String()), sa.column("confirmed_at", sa.DateTime()))
    rows = bind.execute(sa.select(subs.c.id, subs.c.retainer_id, subs.c.email, subs.c.confirmed_at)
                        .order_by(subs.c.confirmed_at.is_(None), subs.c.id)).all()   # confirmed, then oldest first
    kept: dict[tuple[int, str], int] = {}
    for sub_id, retainer_id, email, _ in rows:
        key = (retainer_id, _address(email))
        if key in kept:
            bind.execute(subs.delete().where(subs.c.id == sub_id))
            continue
        kept[key] = sub_id
    for (retainer_id, address), sub_id in kept.items():
        bind.execute(subs.update().where(subs.c.id == sub_id, subs.c.email != address).values(email=address))


def downgrade() -> None:
    """Nothing to undo: the characters removed carried no meaning."""
