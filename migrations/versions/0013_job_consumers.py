"""job consumers: each queue consumer's last sign of life, for /healthz and `hourtab worker --check`

Revision ID: 0013
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op

import hourtab.core.db

revision = "0013"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_consumers",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("threads", sa.Integer(), nullable=False),
        sa.Column("started_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("seen_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_job_consumers")),
    )
    with op.batch_alter_table("job_consumers") as batch_op:
        batch_op.create_index(batch_op.f("ix_job_consumers_seen_at"), ["seen_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("job_consumers") as batch_op:
        batch_op.drop_index(batch_op.f("ix_job_consumers_seen_at"))
    op.drop_table("job_consumers")
