"""uploads: a CSV's bytes live in the blob store (``uploads.blob_key``), not in ``uploads.content``

Revision ID: 0016
Revises: 0013

Each stored upload's bytes are put in the blob store under the key the upload pipeline uses
(``imports/<account>/<sha256>/upload.csv``, see ``hourtab.imports.uploads.csv_key``), one row
at a time so no more than one file is in memory; rows without bytes (a tracker's live sync) keep
no key. Then the column is dropped. The blob store is the one the settings name (or the one the
caller gave Alembic as ``config.attributes["blobs"]``). A blob is written before its row points at
it, and keys are content-addressed, so a migration stopped half-way and run again stores nothing twice.
"""
import hashlib

import sqlalchemy as sa
from alembic import context, op

revision = "0016"
down_revision = "0013"
branch_labels = None
depends_on = None

uploads = sa.table("uploads", sa.column("id", sa.Integer), sa.column("account_id", sa.Integer),
                   sa.column("content", sa.LargeBinary), sa.column("blob_key", sa.String))


def _blobs():
    given = context.config.attributes.get("blobs")
    if given is not None:
        return given
    from app.config import from_environment
    from app.extensions import blobs_from_settings

    return blobs_from_settings(from_environment())


def upgrade() -> None:
    # Plain ALTER TABLE, not batch mode: a batch copy of ``uploads`` on SQLite drops the table that
    # time entries refer to, which their foreign keys refuse (SQLite 3.35+ drops a column in place).
    op.add_column("uploads", sa.Column("blob_key", sa.String(length=300), nullable=True))
    bind = op.get_bind()
    ids = bind.execute(sa.select(uploads.c.id).where(sa.func.length(uploads.c.content) > 0)
                       .order_by(uploads.c.id)).scalars().all()
    store = _blobs() if ids else None
    for upload_id in ids:
        account_id, content = bind.execute(sa.select(uploads.c.account_id, uploads.c.content)
                                           .where(uploads.c.id == upload_id)).one()
        key = f"imports/{account_id}/{hashlib.sha256(content).hexdigest()}/upload.csv"
        if not store.exists(key):
            store.put_bytes(key, bytes(content))
        bind.execute(uploads.update().where(uploads.c.id == upload_id).values(blob_key=key))
    op.drop_column("uploads", "content")


def downgrade() -> None:
    op.add_column("uploads", sa.Column("content", sa.LargeBinary(), nullable=False, server_default=sa.text("''")))
    bind = op.get_bind()
    rows = bind.execute(sa.select(uploads.c.id, uploads.c.blob_key).where(uploads.c.blob_key.is_not(None))).all()
    store = _blobs() if rows else None
    for upload_id, key in rows:
        bind.execute(uploads.update().where(uploads.c.id == upload_id).values(content=store.get_bytes(key)))
    op.drop_column("uploads", "blob_key")
