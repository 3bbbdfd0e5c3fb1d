"""retainers: rule names split on commas by the old terms form are joined back

Revision ID: 0017e
Revises: 0019

The terms form took a retainer's clients, projects and tags as one comma-separated text field, so
saving it for the client "Panageas, Kathy" (or "Acme, Inc.") stored the clients "Panageas" and
"Kathy", and the retainer lost every entry. Rules are lists of exact names now; this joins back
the names of each rule whose parts match no name the account's entries carry while the joined name
does, routes that account's entries again, and records the closed periods that get their figures
back as revised (reason "migration"), as their loss was. Domain code
(``hourtab.retainers.repair.repair_split_rules``) that reads and writes named columns only, so it
runs on this schema whatever columns later migrations add. No schema change; nothing to undo.
"""
from alembic import op

revision = "0017e"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from sqlalchemy.orm import Session

    from hourtab.retainers.repair import repair_split_rules

    # Joins the migration's transaction (nothing is committed here; Alembic commits at the end).
    session = Session(bind=op.get_bind())
    repair_split_rules(session)
    session.flush()
    session.close()


def downgrade() -> None:
    """The joined names are the ones the consultant typed: splitting them again would only break the rules."""
