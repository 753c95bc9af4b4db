"""the delivery log's index by (webhook, identity) belongs to the embedded backend

Revision ID: 0030
Revises: 0029

Only the embedded backend's de-duplication reads ix_deliveries_identity; with Redis every
logged delivery still wrote a page of it. The embedded backend now makes it when it starts
(gateway/foundation/backends/identity_index.py).
"""

from __future__ import annotations

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_deliveries_identity")


def downgrade() -> None:
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_deliveries_identity ON deliveries (webhook_uid, identity)"
    )
