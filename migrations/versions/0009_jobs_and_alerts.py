"""jobs and alerts: queued work with its progress; alert settings, subscriptions, events, deliveries

Revision ID: 0009
Revises: 0008
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = '0009'
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('jobs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=40), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('result', sa.JSON(), nullable=False),
    sa.Column('phase', sa.String(length=100), nullable=False),
    sa.Column('done', sa.BigInteger(), nullable=False),
    sa.Column('total', sa.BigInteger(), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('lease_until', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('worker', sa.String(length=100), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('started_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('updated_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_jobs_account_id_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jobs_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_status'), ['status'], unique=False)

    op.create_table('alert_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=False),
    sa.Column('alert', sa.String(length=32), nullable=False),
    sa.Column('period_key', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('facts', sa.JSON(), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('sent_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_alert_events_retainer_id_retainers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_events')),
    sa.UniqueConstraint('retainer_id', 'alert', 'period_key', name='uq_alert_events_retainer_id_alert_period_key')
    )
    with op.batch_alter_table('alert_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_events_retainer_id'), ['retainer_id'], unique=False)

    op.create_table('alert_settings',
    sa.Column('retainer_id', sa.Integer(), nullable=False),
    sa.Column('enabled', sa.JSON(), nullable=False),
    sa.Column('copy_to_consultant', sa.Boolean(), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_alert_settings_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_alert_settings_retainer_id_retainers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('retainer_id', name=op.f('pk_alert_settings'))
    )
    with op.batch_alter_table('alert_settings', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_settings_account_id'), ['account_id'], unique=False)

    op.create_table('alert_subscriptions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('confirmed_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_alert_subscriptions_retainer_id_retainers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_subscriptions')),
    sa.UniqueConstraint('retainer_id', 'email', name='uq_alert_subscriptions_retainer_id_email'),
    sa.UniqueConstraint('token', name='uq_alert_subscriptions_token')
    )
    with op.batch_alter_table('alert_subscriptions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_subscriptions_retainer_id'), ['retainer_id'], unique=False)

    op.create_table('alert_deliveries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('event_id', sa.Integer(), nullable=False),
    sa.Column('recipient', sa.String(length=40), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('sent_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['event_id'], ['alert_events.id'], name=op.f('fk_alert_deliveries_event_id_alert_events'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_deliveries')),
    sa.UniqueConstraint('event_id', 'recipient', name='uq_alert_deliveries_event_id_recipient')
    )


def downgrade() -> None:
    op.drop_table('alert_deliveries')
    with op.batch_alter_table('alert_subscriptions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alert_subscriptions_retainer_id'))

    op.drop_table('alert_subscriptions')
    with op.batch_alter_table('alert_settings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alert_settings_account_id'))

    op.drop_table('alert_settings')
    with op.batch_alter_table('alert_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alert_events_retainer_id'))

    op.drop_table('alert_events')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_status'))
        batch_op.drop_index(batch_op.f('ix_jobs_account_id'))

    op.drop_table('jobs')
