"""why a delivery was rejected, and the request headers of accepted ones

Revision ID: 0007
Revises: 0006

- deliveries.reason: the rejection reason code (gateway/kernel/rejections.py), null for accepted and
  duplicate deliveries and for rows written before this revision.
- deliveries.headers: the request headers of an accepted delivery, credentials redacted, as an
  HTTP/1.1 header block (docs/ingress.md).
Both are plain nullable columns: added in place, no table rebuild.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deliveries", sa.Column("reason", sa.String(length=32), nullable=True))
    op.add_column("deliveries", sa.Column("headers", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    op.drop_column("deliveries", "headers")
    op.drop_column("deliveries", "reason")
