"""smee-compatible delivery channels

Revision ID: 0027
Revises: 0025

- delivery_channels: capability URLs that stream one webhook's or provider connection's
  accepted deliveries in smee.io's format (docs/events.md#smee-compatible-channels); the token
  kept as its SHA-256, the row deleted to revoke it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0027"
down_revision = "0025"  # 0025 landed after 0026: the head before this one
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "delivery_channels",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("source_uid", sa.String(length=64), nullable=False),
        sa.Column("team_uid", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=True),
        sa.Column("created_by", sa.String(length=64), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.ForeignKeyConstraint(["team_uid"], ["teams.uid"]),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index("ix_delivery_channels_source_uid", "delivery_channels", ["source_uid"])
    op.create_index("ux_delivery_channels_token", "delivery_channels", ["token_hash"], unique=True)


def downgrade() -> None:
    op.drop_table("delivery_channels")
