"""incidents: incidents, their evidence links (runs and profiles), time entries, actions, timeline events

Revision ID: 0005
Revises: 0004 (evidence: incident_evidence.evidence_id references it)
Depends on: 0003 (retainers; and through it 0002, time_entries)

Why not ``down_revision = "0001"`` with ``depends_on = ("0002", "0003", "0004")``: Alembic 1.x
crashes (KeyError '0001' in the version-table update) when the last branch off 0001 to be applied
carries dependencies on two other branches. Chaining on 0004 and depending on 0003 expresses the
same ordering and upgrades cleanly on SQLite and PostgreSQL.
"""
from alembic import op
import sqlalchemy as sa
import hourtab.core.db


revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('incidents',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('retainer_id', sa.Integer(), nullable=True),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('slug', sa.String(length=120), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('environment', sa.String(length=500), nullable=False),
    sa.Column('sections', sa.JSON(), nullable=False),
    sa.Column('fix_before', sa.Text(), nullable=False),
    sa.Column('fix_after', sa.Text(), nullable=False),
    sa.Column('log_entry', sa.Text(), nullable=False),
    sa.Column('log_entry_edited', sa.Boolean(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('created_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('published_at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], name=op.f('fk_incidents_account_id_accounts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['retainer_id'], ['retainers.id'], name=op.f('fk_incidents_retainer_id_retainers'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_incidents')),
    sa.UniqueConstraint('account_id', 'slug', name=op.f('uq_incidents_account_id'))
    )
    with op.batch_alter_table('incidents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incidents_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_incidents_retainer_id'), ['retainer_id'], unique=False)

    op.create_table('incident_actions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('incident_id', sa.Integer(), nullable=False),
    sa.Column('text', sa.String(length=500), nullable=False),
    sa.Column('owner', sa.String(length=200), nullable=False),
    sa.Column('due', sa.Date(), nullable=True),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.ForeignKeyConstraint(['incident_id'], ['incidents.id'], name=op.f('fk_incident_actions_incident_id_incidents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_incident_actions'))
    )
    with op.batch_alter_table('incident_actions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incident_actions_incident_id'), ['incident_id'], unique=False)

    op.create_table('incident_entries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('incident_id', sa.Integer(), nullable=False),
    sa.Column('time_entry_id', sa.Integer(), nullable=False),
    sa.Column('phase', sa.String(length=40), nullable=False),
    sa.ForeignKeyConstraint(['incident_id'], ['incidents.id'], name=op.f('fk_incident_entries_incident_id_incidents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['time_entry_id'], ['time_entries.id'], name=op.f('fk_incident_entries_time_entry_id_time_entries'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_incident_entries')),
    sa.UniqueConstraint('incident_id', 'time_entry_id', name=op.f('uq_incident_entries_incident_id'))
    )
    with op.batch_alter_table('incident_entries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incident_entries_incident_id'), ['incident_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_incident_entries_time_entry_id'), ['time_entry_id'], unique=False)

    op.create_table('incident_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('incident_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('at', hourtab.core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('text', sa.String(length=500), nullable=False),
    sa.Column('manual', sa.Boolean(), nullable=False),
    sa.Column('hidden', sa.Boolean(), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['incident_id'], ['incidents.id'], name=op.f('fk_incident_events_incident_id_incidents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_incident_events')),
    sa.UniqueConstraint('incident_id', 'key', name=op.f('uq_incident_events_incident_id'))
    )
    with op.batch_alter_table('incident_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incident_events_incident_id'), ['incident_id'], unique=False)

    op.create_table('incident_evidence',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('incident_id', sa.Integer(), nullable=False),
    sa.Column('evidence_id', sa.Integer(), nullable=True),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('profile_name', sa.String(length=300), nullable=False),
    sa.Column('profile', sa.JSON(), nullable=True),
    sa.Column('profile_sha256', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['evidence_id'], ['evidence.id'], name=op.f('fk_incident_evidence_evidence_id_evidence'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['incident_id'], ['incidents.id'], name=op.f('fk_incident_evidence_incident_id_incidents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_incident_evidence')),
    sa.UniqueConstraint('incident_id', 'evidence_id', name=op.f('uq_incident_evidence_incident_id'))
    )
    with op.batch_alter_table('incident_evidence', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incident_evidence_evidence_id'), ['evidence_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_incident_evidence_incident_id'), ['incident_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('incident_evidence', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incident_evidence_incident_id'))
        batch_op.drop_index(batch_op.f('ix_incident_evidence_evidence_id'))

    op.drop_table('incident_evidence')
    with op.batch_alter_table('incident_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incident_events_incident_id'))

    op.drop_table('incident_events')
    with op.batch_alter_table('incident_entries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incident_entries_time_entry_id'))
        batch_op.drop_index(batch_op.f('ix_incident_entries_incident_id'))

    op.drop_table('incident_entries')
    with op.batch_alter_table('incident_actions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incident_actions_incident_id'))

    op.drop_table('incident_actions')
    with op.batch_alter_table('incidents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incidents_retainer_id'))
        batch_op.drop_index(batch_op.f('ix_incidents_account_id'))

    op.drop_table('incidents')
