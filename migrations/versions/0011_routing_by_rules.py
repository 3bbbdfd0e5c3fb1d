"""retainers: entries count where the rules send them; revisions of closed periods are recorded

Revision ID: 0011
Revises: 0010

Adds ``period_revisions`` (a closed period's figure before each later change, issue 19 item 5),
then routes every stored entry by the retainers' rules again: until now an upload imported for a
retainer sent all its entries there, other clients' rows included. Periods the repair changes are
recorded as revised (reason "migration"). The repair is domain code
(``hourtab.retainers.repair``) that reads and writes named columns only, so it runs on this
schema whatever columns later migrations add.
"""
import sqlalchemy as sa
from alembic import op

import hourtab.core.db

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('period_revisions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=False),
    sa.Column('period_start', sa.Date(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('revised_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('was_used_s', sa.Integer(), nullable=False),
    sa.Column('used_s', sa.Integer(), nullable=False),
    sa.Column('was_entries', sa.Integer(), nullable=False),
    sa.Column('entries', sa.Integer(), nullable=False),
    sa.Column('reason', sa.String(length=16), nullable=False),
    sa.Column('upload_id', sa.Integer(), nullable=True),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_period_revisions_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_period_revisions_retainer_id_retainers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_period_revisions')),
    sa.UniqueConstraint('retainer_id', 'period_start', 'number', name=op.f('uq_period_revisions_retainer_id'))
    )
    with op.batch_alter_table('period_revisions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_period_revisions_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_period_revisions_retainer_id'), ['retainer_id'], unique=False)

    from sqlalchemy.orm import Session

    from hourtab.retainers.repair import rematch_old_assignments

    # Joins the migration's transaction (nothing is committed here; Alembic commits at the end).
    session = Session(bind=op.get_bind())
    rematch_old_assignments(session)
    session.flush()
    session.close()


def downgrade() -> None:
    with op.batch_alter_table('period_revisions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_period_revisions_retainer_id'))
        batch_op.drop_index(batch_op.f('ix_period_revisions_account_id'))
    op.drop_table('period_revisions')
