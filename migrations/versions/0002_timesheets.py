"""timesheets: uploads, time entries, entry changes, import profiles

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('import_profiles',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('mapping', sa.JSON(), nullable=False),
    sa.Column('duration_unit', sa.String(length=16), nullable=False),
    sa.Column('date_order', sa.String(length=3), nullable=True),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_import_profiles_account_id_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_import_profiles')),
    sa.UniqueConstraint('account_id', 'name', name='uq_import_profiles_account_id_name')
    )
    with op.batch_alter_table('import_profiles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_import_profiles_account_id'), ['account_id'], unique=False)

    op.create_table('uploads',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('filename', sa.String(length=255), nullable=False),
    sa.Column('content', sa.LargeBinary(), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('format', sa.String(length=32), nullable=False),
    sa.Column('explanation', sa.Text(), nullable=False),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=True),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=320), nullable=False),
    sa.Column('imported_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('rows_count', sa.Integer(), nullable=False),
    sa.Column('new_count', sa.Integer(), nullable=False),
    sa.Column('unchanged_count', sa.Integer(), nullable=False),
    sa.Column('changed_count', sa.Integer(), nullable=False),
    sa.Column('missing_count', sa.Integer(), nullable=False),
    sa.Column('skipped_count', sa.Integer(), nullable=False),
    sa.Column('total_seconds', sa.BigInteger(), nullable=False),
    sa.Column('first_date', sa.Date(), nullable=True),
    sa.Column('last_date', sa.Date(), nullable=True),
    sa.Column('skipped_rows', sa.JSON(), nullable=False),
    sa.Column('warnings', sa.JSON(), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_uploads_account_id_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_uploads'))
    )
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_uploads_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_uploads_sha256'), ['sha256'], unique=False)

    op.create_table('time_entries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('start_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('end_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('local_date', sa.Date(), nullable=False),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('duration_s', sa.Integer(), nullable=False),
    sa.Column('client', sa.Text(), nullable=False),
    sa.Column('project', sa.Text(), nullable=False),
    sa.Column('task', sa.Text(), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('tags', sa.Text(), nullable=False),
    sa.Column('billable', sa.Boolean(), nullable=True),
    sa.Column('user_name', sa.Text(), nullable=False),
    sa.Column('source_format', sa.String(length=32), nullable=False),
    sa.Column('source_line', sa.Integer(), nullable=False),
    sa.Column('upload_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('updated_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_time_entries_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['upload_id'], ['uploads.id'], name=op.f('fk_time_entries_upload_id_uploads')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_time_entries')),
    sa.UniqueConstraint('account_id', 'fingerprint', name='uq_time_entries_account_id_fingerprint')
    )
    with op.batch_alter_table('time_entries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_time_entries_account_id'), ['account_id'], unique=False)
        batch_op.create_index('ix_time_entries_account_id_local_date', ['account_id', 'local_date'], unique=False)
        batch_op.create_index(batch_op.f('ix_time_entries_upload_id'), ['upload_id'], unique=False)

    op.create_table('time_entry_changes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('entry_id', sa.Integer(), nullable=False),
    sa.Column('upload_id', sa.Integer(), nullable=True),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('old_values', sa.JSON(), nullable=False),
    sa.Column('changed_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_time_entry_changes_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['entry_id'], ['time_entries.id'], name=op.f('fk_time_entry_changes_entry_id_time_entries'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['upload_id'], ['uploads.id'], name=op.f('fk_time_entry_changes_upload_id_uploads'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_time_entry_changes'))
    )
    with op.batch_alter_table('time_entry_changes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_time_entry_changes_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_time_entry_changes_entry_id'), ['entry_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_time_entry_changes_upload_id'), ['upload_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('time_entry_changes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_time_entry_changes_upload_id'))
        batch_op.drop_index(batch_op.f('ix_time_entry_changes_entry_id'))
        batch_op.drop_index(batch_op.f('ix_time_entry_changes_account_id'))

    op.drop_table('time_entry_changes')
    with op.batch_alter_table('time_entries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_time_entries_upload_id'))
        batch_op.drop_index('ix_time_entries_account_id_local_date')
        batch_op.drop_index(batch_op.f('ix_time_entries_account_id'))

    op.drop_table('time_entries')
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_uploads_sha256'))
        batch_op.drop_index(batch_op.f('ix_uploads_account_id'))

    op.drop_table('uploads')
    with op.batch_alter_table('import_profiles', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_import_profiles_account_id'))

    op.drop_table('import_profiles')
