"""kept_day_totals: each retainer's day totals kept per rounding rule, beside the rules kept

Revision ID: 0022k
Revises: 0021t

A ledger reads a row a day from ``retainer_day_totals`` instead of summing every assignment
(``hourtab.retainers.kept_totals``). Existing retainers get theirs here: every rounding rule their
terms and terms versions use, summed from their entries with the code the services keep them with.
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

from hourtab.retainers.kept_totals import keep_rules
from hourtab.retainers.terms import Rounding

revision = "0022k"
down_revision = "0021t"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "retainer_day_totals",
        sa.Column("retainer_id", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(length=24), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("entries", sa.Integer(), nullable=False),
        sa.Column("rounded_s", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["retainer_id"], ["retainers.id"],
                                name=op.f("fk_retainer_day_totals_retainer_id_retainers"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("retainer_id", "rule", "day", name=op.f("pk_retainer_day_totals")),
    )
    op.create_table(
        "retainer_total_rules",
        sa.Column("retainer_id", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(length=24), nullable=False),
        sa.ForeignKeyConstraint(["retainer_id"], ["retainers.id"],
                                name=op.f("fk_retainer_total_rules_retainer_id_retainers"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("retainer_id", "rule", name=op.f("pk_retainer_total_rules")),
    )
    bind = op.get_bind()
    rules: dict[tuple[int, int], set[Rounding]] = {}
    for query in ("SELECT account_id, id, rounding_min, rounding_mode, minimum_min FROM retainers",
                  "SELECT account_id, retainer_id, rounding_min, rounding_mode, minimum_min FROM retainer_terms"):
        for account_id, retainer_id, increment, mode, minimum in bind.execute(sa.text(query)):
            rules.setdefault((account_id, retainer_id), set()).add(Rounding(increment, mode, minimum))
    session = Session(bind=bind)
    for (account_id, retainer_id), kept in sorted(rules.items()):
        keep_rules(session, account_id, retainer_id, sorted(kept, key=lambda r: r.key))
    session.flush()


def downgrade() -> None:
    op.drop_table("retainer_total_rules")
    op.drop_table("retainer_day_totals")
