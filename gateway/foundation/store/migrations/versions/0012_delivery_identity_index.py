"""an index of the delivery log by (webhook, identity)

Revision ID: 0012
Revises: 0011

The embedded backend holds the most recent de-duplication entries in memory and looks older ones
up in the log (gateway/foundation/backends/seen_deliveries.py): by webhook and identity.
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_deliveries_identity", "deliveries", ["webhook_uid", "identity"])


def downgrade() -> None:
    op.drop_index("ix_deliveries_identity", table_name="deliveries")
