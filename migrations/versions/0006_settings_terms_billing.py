"""account settings, effective-dated retainer terms, re-enable a disabled link, plan requests

Revision ID: 0006
Revises: 0005

Every existing retainer gets its first terms version, in force from its start date, copied from
the terms it has today: the ledger then reads terms from ``retainer_terms`` only.
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('accounts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rounding_min', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('hours_unit', sa.String(length=8), server_default='decimal',
                                      nullable=False))
    with op.batch_alter_table('retainers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('disabled_token', sa.String(length=64), nullable=True))

    op.create_table('retainer_terms',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=False),
    sa.Column('effective_from', sa.Date(), nullable=False),
    sa.Column('allotment_s', sa.Integer(), nullable=False),
    sa.Column('rollover', sa.String(length=8), nullable=False),
    sa.Column('rollover_cap_s', sa.Integer(), nullable=True),
    sa.Column('rollover_expiry_periods', sa.Integer(), nullable=True),
    sa.Column('overage', sa.String(length=8), nullable=False),
    sa.Column('overage_rate', sa.Numeric(precision=12, scale=2), nullable=True),
    sa.Column('rounding_min', sa.Integer(), nullable=False),
    sa.Column('rounding_mode', sa.String(length=8), nullable=False),
    sa.Column('minimum_min', sa.Integer(), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_retainer_terms_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_retainer_terms_retainer_id_retainers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_retainer_terms')),
    sa.UniqueConstraint('retainer_id', 'effective_from', name=op.f('uq_retainer_terms_retainer_id'))
    )
    with op.batch_alter_table('retainer_terms', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_retainer_terms_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_retainer_terms_retainer_id'), ['retainer_id'], unique=False)
    op.execute(
        "INSERT INTO retainer_terms (retainer_id, account_id, effective_from, allotment_s, rollover, "
        "rollover_cap_s, rollover_expiry_periods, overage, overage_rate, rounding_min, rounding_mode, "
        "minimum_min, created_at) SELECT id, account_id, start_date, allotment_s, rollover, rollover_cap_s, "
        "rollover_expiry_periods, overage, overage_rate, rounding_min, rounding_mode, minimum_min, created_at "
        "FROM retainers")

    op.create_table('plan_requests',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.Column('plan', sa.String(length=16), nullable=False),
    sa.Column('provider', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('decided_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_plan_requests_account_id_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_plan_requests'))
    )
    with op.batch_alter_table('plan_requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_plan_requests_account_id'), ['account_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('plan_requests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_plan_requests_account_id'))
    op.drop_table('plan_requests')
    with op.batch_alter_table('retainer_terms', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_retainer_terms_retainer_id'))
        batch_op.drop_index(batch_op.f('ix_retainer_terms_account_id'))
    op.drop_table('retainer_terms')
    with op.batch_alter_table('retainers', schema=None) as batch_op:
        batch_op.drop_column('disabled_token')
    with op.batch_alter_table('accounts', schema=None) as batch_op:
        batch_op.drop_column('hours_unit')
        batch_op.drop_column('rounding_min')
