"""retainers: drop the database-wide entry marks; the per-retainer revision is the only cache key

Revision ID: 0010
Revises: 0009

Entries are now assigned to retainers by the services that change them, in the same transaction,
and those services bump the affected account's ``retainers.revision``. The marks that let the public
page notice new entries (and match them on a GET) have no reader left.
"""
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("retainers") as batch_op:
        batch_op.drop_column("seen_change_id")
        batch_op.drop_column("seen_entry_id")


def downgrade() -> None:
    with op.batch_alter_table("retainers") as batch_op:
        batch_op.add_column(sa.Column("seen_entry_id", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("seen_change_id", sa.Integer(), nullable=False, server_default="0"))
