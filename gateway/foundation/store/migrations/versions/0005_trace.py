"""delivery outcome traces and replays

Revision ID: 0005
Revises: 0004

- deliveries.trace: what the evaluator decided for an accepted delivery (each automation
  considered: matched, or the first filter condition that failed; the runs it started), JSON.
- delivery_replays: a delivery made by replaying a stored one, the one it replays, and the
  Idempotency-Key it was asked with (unique per webhook).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.add_column("deliveries", sa.Column("trace", sa.LargeBinary(), nullable=True))
    op.create_table(
        "delivery_replays",
        sa.Column("delivery_id", sa.String(length=64), nullable=False),
        sa.Column("webhook_uid", sa.String(length=64), nullable=False),
        sa.Column("replay_of", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("requested_by", sa.String(length=64), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.PrimaryKeyConstraint("delivery_id"),
    )
    op.create_index("ix_delivery_replays_replay_of", "delivery_replays", ["replay_of"])
    op.create_index(
        "ux_delivery_replays_key",
        "delivery_replays",
        ["webhook_uid", "idempotency_key"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_table("delivery_replays")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("trace")
