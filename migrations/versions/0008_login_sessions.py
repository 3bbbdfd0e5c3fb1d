"""login sessions: a server-side record per log-in, so log-out and password changes end sessions

Revision ID: 0008
Revises: 0007
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('login_sessions',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_login_sessions_account_id_accounts'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_login_sessions'))
    )
    with op.batch_alter_table('login_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_login_sessions_account_id'), ['account_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('login_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_login_sessions_account_id'))
    op.drop_table('login_sessions')
