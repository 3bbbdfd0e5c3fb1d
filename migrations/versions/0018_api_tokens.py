"""api tokens: personal access tokens for the consultant's own tools (stored as SHA-256 digests)

Revision ID: 0018
Revises: 0017r
"""
import sqlalchemy as sa
from alembic import op

import hourtab.core.db

revision = "0018"
down_revision = "0017r"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("hint", sa.String(length=16), nullable=False),
        sa.Column("created_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_api_tokens_account_id_accounts"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("digest", name=op.f("uq_api_tokens_digest")),
    )
    with op.batch_alter_table("api_tokens") as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_account_id"), ["account_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_account_id"))
    op.drop_table("api_tokens")
