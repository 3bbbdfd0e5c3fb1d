"""evidence: parsed W&B runs and exports per account

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('evidence',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=500), nullable=False),
    sa.Column('run_id', sa.String(length=128), nullable=False),
    sa.Column('project', sa.String(length=300), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('source_name', sa.String(length=300), nullable=False),
    sa.Column('upload_key', sa.String(length=500), nullable=False),
    sa.Column('upload_sha256', sa.String(length=64), nullable=False),
    sa.Column('part', sa.Integer(), nullable=False),
    sa.Column('steps', sa.Integer(), nullable=False),
    sa.Column('runtime_s', sa.Float(), nullable=True),
    sa.Column('blobs', sa.JSON(), nullable=False),
    sa.Column('facts', sa.JSON(), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_evidence_account_id_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_evidence')),
    sa.UniqueConstraint('account_id', 'upload_sha256', 'part', name='uq_evidence_account_id_upload_sha256_part')
    )
    with op.batch_alter_table('evidence', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_evidence_account_id'), ['account_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('evidence', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_evidence_account_id'))
    op.drop_table('evidence')
