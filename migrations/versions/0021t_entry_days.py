"""entry_days: each counted entry's local day in its retainer's zone, beside its assignment

Revision ID: 0021t
Revises: 0021l

Ledgers sum entries by local day (``hourtab.retainers.totals``) with one ``GROUP BY`` over
``(retainer_id, day)``; the day is computed once, when the entry is routed. Existing assignments
get theirs here, a retainer at a time, with the same function the routing uses.
"""
import sqlalchemy as sa
from alembic import op

from hourtab.retainers.days import local_days

revision = "0021t"
down_revision = "0021l"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("retainer_entries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("day", sa.Date(), nullable=True))
    bind = op.get_bind()
    held = sa.table("retainer_entries", sa.column("entry_id", sa.Integer), sa.column("retainer_id", sa.Integer),
                    sa.column("day", sa.Date))
    entries = sa.table("time_entries", sa.column("id", sa.Integer), sa.column("start_at", sa.String),
                       sa.column("local_date", sa.String))
    zones = bind.execute(sa.text("SELECT id, timezone FROM retainers")).all()
    for retainer_id, zone in zones:
        rows = bind.execute(sa.select(entries.c.id, sa.cast(entries.c.start_at, sa.String),
                                      sa.cast(entries.c.local_date, sa.String))
                            .join(held, held.c.entry_id == entries.c.id)
                            .where(held.c.retainer_id == retainer_id)).all()
        if rows:
            days = local_days([r[1] for r in rows], [r[2] for r in rows], zone)
            bind.execute(held.update().where(held.c.entry_id == sa.bindparam("eid")).values(day=sa.bindparam("d")),
                         [{"eid": r[0], "d": d} for r, d in zip(rows, days, strict=True)])
    with op.batch_alter_table("retainer_entries", schema=None) as batch_op:
        batch_op.alter_column("day", existing_type=sa.Date(), nullable=False)
        batch_op.create_index("ix_retainer_entries_retainer_id_day", ["retainer_id", "day"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("retainer_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_retainer_entries_retainer_id_day")
        batch_op.drop_column("day")
