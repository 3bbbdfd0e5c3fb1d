"""retainer language: the language the client's page, statement, invoice, feed and e-mails are written in

Revision ID: 0021l
Revises: 0020n

Existing retainers were written in English, so the column arrives filled with ``en``. Plain
``ADD COLUMN`` (no batch copy: on SQLite a copy would drop ``retainers`` and cascade to its children).
"""
import sqlalchemy as sa
from alembic import op

revision = "0021l"
down_revision = "0020n"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("retainers", sa.Column("language", sa.String(8), nullable=False, server_default="en"))


def downgrade() -> None:
    op.drop_column("retainers", "language")
