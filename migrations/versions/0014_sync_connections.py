"""sync: connections to time trackers' APIs (sealed tokens, schedule, cursor) and tracker entry ids

Revision ID: 0014
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = "0014"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sync_connections',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tracker', sa.String(length=16), nullable=False),
    sa.Column('api_url', sa.String(length=300), nullable=False),
    sa.Column('workspace', sa.String(length=100), nullable=False),
    sa.Column('tracker_user_id', sa.String(length=100), nullable=False),
    sa.Column('tracker_user', sa.String(length=200), nullable=False),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('token_sealed', sa.LargeBinary(), nullable=False),
    sa.Column('token_hint', sa.String(length=8), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('pause_reason', sa.Text(), nullable=False),
    sa.Column('choices', sa.JSON(), nullable=False),
    sa.Column('cursor', sa.JSON(), nullable=False),
    sa.Column('upload_id', sa.Integer(), nullable=True),
    sa.Column('next_sync_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_sync_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_success_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_result', sa.JSON(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('lock_job_id', sa.String(length=32), nullable=True),
    sa.Column('last_job_id', sa.String(length=32), nullable=True),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_sync_connections_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['upload_id'], ['uploads.id'], name=op.f('fk_sync_connections_upload_id_uploads'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sync_connections')),
    sa.UniqueConstraint('account_id', 'tracker', 'api_url', 'workspace', name='uq_sync_connections_account_id_tracker')
    )
    with op.batch_alter_table('sync_connections', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sync_connections_account_id'), ['account_id'], unique=False)
        batch_op.create_index('ix_sync_connections_status_next_sync_at', ['status', 'next_sync_at'], unique=False)

    op.create_table('sync_entries',
    sa.Column('connection_id', sa.Integer(), nullable=False),
    sa.Column('external_id', sa.String(length=64), nullable=False),
    sa.Column('entry_id', sa.Integer(), nullable=False),
    sa.Column('remote_hash', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['connection_id'], ['sync_connections.id'], name=op.f('fk_sync_entries_connection_id_sync_connections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['entry_id'], ['time_entries.id'], name=op.f('fk_sync_entries_entry_id_time_entries'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('connection_id', 'external_id', name=op.f('pk_sync_entries')),
    sa.UniqueConstraint('entry_id', name='uq_sync_entries_entry_id')
    )


def downgrade() -> None:
    op.drop_table('sync_entries')
    with op.batch_alter_table('sync_connections', schema=None) as batch_op:
        batch_op.drop_index('ix_sync_connections_status_next_sync_at')
        batch_op.drop_index(batch_op.f('ix_sync_connections_account_id'))

    op.drop_table('sync_connections')
