"""retainers in money: a fee, a currency and an hourly rate on the terms; top-ups bought for an amount

Revision ID: 0020m
Revises: 0017e

The fee, currency and hourly rate are versioned like the other terms (``retainer_terms``) and mirrored
on ``retainers`` as the latest version, as the other figures are. Existing retainers were sold in
hours: their money columns stay empty, so nothing is priced until the consultant sets a fee or a rate.

Plain ``ADD COLUMN`` / ``DROP COLUMN`` (SQLite has both since 3.35), not a batch copy: on SQLite a batch
copy drops and recreates ``retainers``, and with foreign keys on, dropping it would cascade to every
table that refers to it (entries, terms, credits).
"""
import sqlalchemy as sa
from alembic import op

revision = "0020m"
down_revision = "0017e"
branch_labels = None
depends_on = None

TERMS_TABLES = ("retainers", "retainer_terms")
MONEY = {table: (("fee", sa.Numeric(16, 4)), ("currency", sa.String(3)), ("hourly_rate", sa.Numeric(16, 4)))
         for table in TERMS_TABLES}
MONEY["retainer_credits"] = (("amount", sa.Numeric(16, 4)), ("currency", sa.String(3)))


def upgrade() -> None:
    for table, columns in MONEY.items():
        for name, kind in columns:
            op.add_column(table, sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    for table, columns in MONEY.items():
        for name, _ in columns:
            op.drop_column(table, name)
