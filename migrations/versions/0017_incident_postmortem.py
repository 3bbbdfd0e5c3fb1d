"""incidents: what a postmortem reader expects — severity, status, milestones, price per GPU-hour

Revision ID: 0017r
Revises: 0016

Severity and status, the four milestones (began, detected, diagnosed, resolved) the consultant may
set by hand (``NULL``: found in the runs' times and time entries when the report is built), and
the price of a GPU-hour with its currency, from which the report states the cost of the hours lost.
Existing incidents get no severity, a derived status and milestones, and no price.

Plain ``ADD COLUMN``, not batch mode: a batch copy of ``incidents`` on SQLite would drop the table
its evidence, entries, actions and events refer to.
"""
import sqlalchemy as sa
from alembic import op

import hourtab.core.db

revision = "0017r"
down_revision = "0016"
branch_labels = None
depends_on = None

MILESTONES = ("began_at", "detected_at", "diagnosed_at", "resolved_at")


def upgrade() -> None:
    op.add_column("incidents", sa.Column("severity", sa.String(length=8), nullable=False, server_default=""))
    op.add_column("incidents", sa.Column("incident_status", sa.String(length=16), nullable=False,
                                         server_default=""))
    for name in MILESTONES:
        op.add_column("incidents", sa.Column(name, hourtab.core.db.UTCDateTime(timezone=True), nullable=True))
    op.add_column("incidents", sa.Column("gpu_hour_price", sa.Numeric(precision=10, scale=2), nullable=True))
    op.add_column("incidents", sa.Column("price_currency", sa.String(length=3), nullable=False,
                                         server_default="USD"))


def downgrade() -> None:
    for name in ("price_currency", "gpu_hour_price", *reversed(MILESTONES), "incident_status", "severity"):
        op.drop_column("incidents", name)
