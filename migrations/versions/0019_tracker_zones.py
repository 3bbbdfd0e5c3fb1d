"""tracker_zones: the zone a tracker writes an account's exports in (its profile's, from a connection)

Revision ID: 0019
Revises: 0018

A CSV export's clock times are in the exporting person's tracker profile zone, so an upload is read
in it (``hourtab.timesheets.zone``). Connections made before kept that zone in
``sync_connections.timezone``: Toggl Track (``/me`` ``timezone``) and Clockify (``/user``
``settings.timeZone``) always name it, so those connections' zones are copied here, one per account
and tracker (the oldest connection's). Harvest and Kimai connections kept the account's zone (their
APIs name no IANA zone), which says nothing about the profile, so nothing is copied for them.
"""
import datetime as dt

import sqlalchemy as sa
from alembic import op

import hourtab.core.db

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

#: Tracker name → (export format, label), as ``hourtab.sync.clients`` had them when this was written.
PROFILE_ZONES = {"toggl": ("toggl", "Toggl Track"), "clockify": ("clockify", "Clockify")}


def upgrade() -> None:
    zones = op.create_table(
        "tracker_zones",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tracker", sa.String(length=32), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("user_name", sa.String(length=200), nullable=False),
        sa.Column("updated_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_tracker_zones_account_id_accounts"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tracker_zones")),
        sa.UniqueConstraint("account_id", "tracker", name="uq_tracker_zones_account_id_tracker"),
    )
    with op.batch_alter_table("tracker_zones", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tracker_zones_account_id"), ["account_id"], unique=False)
    connections = sa.table("sync_connections", sa.column("id", sa.Integer), sa.column("account_id", sa.Integer),
                           sa.column("tracker", sa.String), sa.column("timezone", sa.String),
                           sa.column("tracker_user", sa.String))
    seen: set[tuple[int, str]] = set()
    rows = []
    now = dt.datetime.now(dt.UTC)
    query = sa.select(connections).where(connections.c.tracker.in_(PROFILE_ZONES)).order_by(connections.c.id)
    for c in op.get_bind().execute(query):
        fmt, label = PROFILE_ZONES[c.tracker]
        if (c.account_id, fmt) in seen or not c.timezone:
            continue
        seen.add((c.account_id, fmt))
        rows.append({"account_id": c.account_id, "tracker": fmt, "timezone": c.timezone, "label": label,
                     "user_name": (c.tracker_user or "")[:200], "updated_at": now})
    if rows:
        op.bulk_insert(zones, rows)


def downgrade() -> None:
    with op.batch_alter_table("tracker_zones", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tracker_zones_account_id"))
    op.drop_table("tracker_zones")
