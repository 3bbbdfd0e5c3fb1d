"""invoices: the consultant's invoicing details, each retainer's client details, invoices numbered per account

Revision ID: 0020n
Revises: 0020m

``invoices`` is unique on (account, number): a number is given once and never again, and on
(retainer, month): a statement month is invoiced once, its number kept when the month is revised.
"""
import sqlalchemy as sa
from alembic import op

import hourtab.core.db

revision = "0020n"
down_revision = "0020m"
branch_labels = None
depends_on = None


def _owned(table: str) -> list:
    return [sa.Column("account_id", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=f"fk_{table}_account_id_accounts",
                                    ondelete="CASCADE")]


def _of_retainer(table: str) -> list:
    return [sa.Column("retainer_id", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(["retainer_id"], ["retainers.id"], name=f"fk_{table}_retainer_id_retainers",
                                    ondelete="CASCADE")]


def upgrade() -> None:
    op.create_table(
        "invoice_profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("address", sa.Text(), nullable=False),
        sa.Column("tax_id", sa.String(64), nullable=False),
        sa.Column("payment", sa.Text(), nullable=False),
        sa.Column("tax_label", sa.String(40), nullable=False),
        sa.Column("tax_rate", sa.Numeric(6, 3), nullable=True),
        sa.Column("updated_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
        *_owned("invoice_profiles"),
        sa.PrimaryKeyConstraint("id", name="pk_invoice_profiles"),
        sa.UniqueConstraint("account_id", name="uq_invoice_profiles_account_id"))
    op.create_index("ix_invoice_profiles_account_id", "invoice_profiles", ["account_id"])
    op.create_table(
        "invoice_clients",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("address", sa.Text(), nullable=False),
        sa.Column("tax_id", sa.String(64), nullable=False),
        *_of_retainer("invoice_clients"),
        *_owned("invoice_clients"),
        sa.PrimaryKeyConstraint("id", name="pk_invoice_clients"),
        sa.UniqueConstraint("retainer_id", name="uq_invoice_clients_retainer_id"))
    op.create_index("ix_invoice_clients_account_id", "invoice_clients", ["account_id"])
    op.create_table(
        "invoices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("month", sa.String(7), nullable=False),
        sa.Column("issued_at", hourtab.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("issued_total", sa.Numeric(18, 4), nullable=False),
        sa.Column("issued_revision", sa.Integer(), nullable=False),
        sa.Column("parties", sa.JSON(), nullable=False),
        sa.Column("tax_label", sa.String(40), nullable=False),
        sa.Column("tax_rate", sa.Numeric(6, 3), nullable=True),
        *_of_retainer("invoices"),
        *_owned("invoices"),
        sa.PrimaryKeyConstraint("id", name="pk_invoices"),
        sa.UniqueConstraint("account_id", "number", name="uq_invoices_account_id"),
        sa.UniqueConstraint("retainer_id", "month", name="uq_invoices_retainer_id"))
    op.create_index("ix_invoices_account_id", "invoices", ["account_id"])
    op.create_index("ix_invoices_retainer_id", "invoices", ["retainer_id"])


def downgrade() -> None:
    op.drop_table("invoices")
    op.drop_table("invoice_clients")
    op.drop_table("invoice_profiles")
