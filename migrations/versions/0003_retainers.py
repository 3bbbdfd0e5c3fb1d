"""retainers: retainers, their credits (top-ups, adjustments) and the entry → retainer association

Revision ID: 0003
Revises: 0002 (retainer_entries.entry_id references time_entries.id)

Not a branch off 0001 with ``depends_on = None``: with 0005 depending on this revision, that
shape makes Alembic 1.x fail ``upgrade heads`` with ``KeyError: '0001'`` (it removes 0001 from the
heads twice); a plain parent is the honest dependency and upgrades cleanly.
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('retainers',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('client', sa.String(length=200), nullable=False),
    sa.Column('allotment_s', sa.Integer(), nullable=False),
    sa.Column('period', sa.String(length=16), nullable=False),
    sa.Column('reset_day', sa.Integer(), nullable=False),
    sa.Column('start_date', sa.Date(), nullable=False),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('rollover', sa.String(length=8), nullable=False),
    sa.Column('rollover_cap_s', sa.Integer(), nullable=True),
    sa.Column('rollover_expiry_periods', sa.Integer(), nullable=True),
    sa.Column('overage', sa.String(length=8), nullable=False),
    sa.Column('overage_rate', sa.Numeric(precision=12, scale=2), nullable=True),
    sa.Column('rounding_min', sa.Integer(), nullable=False),
    sa.Column('rounding_mode', sa.String(length=8), nullable=False),
    sa.Column('minimum_min', sa.Integer(), nullable=False),
    sa.Column('match_rules', sa.JSON(), nullable=False),
    sa.Column('public_token', sa.String(length=64), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('seen_entry_id', sa.Integer(), nullable=False),
    sa.Column('seen_change_id', sa.Integer(), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_retainers_account_id_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_retainers')),
    sa.UniqueConstraint('public_token', name=op.f('uq_retainers_public_token'))
    )
    with op.batch_alter_table('retainers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_retainers_account_id'), ['account_id'], unique=False)

    op.create_table('retainer_credits',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('on_date', sa.Date(), nullable=False),
    sa.Column('seconds', sa.Integer(), nullable=False),
    sa.Column('reason', sa.String(length=500), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_retainer_credits_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_retainer_credits_retainer_id_retainers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_retainer_credits'))
    )
    with op.batch_alter_table('retainer_credits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_retainer_credits_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_retainer_credits_retainer_id'), ['retainer_id'], unique=False)

    op.create_table('retainer_entries',
    sa.Column('entry_id', sa.Integer(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['entry_id'], ['time_entries.id'], name=op.f('fk_retainer_entries_entry_id_time_entries'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_retainer_entries_retainer_id_retainers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('entry_id', name=op.f('pk_retainer_entries'))
    )
    with op.batch_alter_table('retainer_entries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_retainer_entries_retainer_id'), ['retainer_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('retainer_entries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_retainer_entries_retainer_id'))
    op.drop_table('retainer_entries')
    with op.batch_alter_table('retainer_credits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_retainer_credits_retainer_id'))
        batch_op.drop_index(batch_op.f('ix_retainer_credits_account_id'))
    op.drop_table('retainer_credits')
    with op.batch_alter_table('retainers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_retainers_account_id'))
    op.drop_table('retainers')
