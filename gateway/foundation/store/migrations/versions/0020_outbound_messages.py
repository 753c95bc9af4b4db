"""outbound messages and their attempts

Revision ID: 0020
Revises: 0019

- outbound_messages: what the gateway sends to other services (replies to providers, events to
  subscribers), written in the transaction of the change it reports, sent with retries by the
  dispatcher (gateway/foundation/outbound); `key` UNIQUE makes enqueueing idempotent.
- outbound_attempts: every attempt at sending one, with its status, latency and error.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    moment = gateway.foundation.store.types.UTCDateTime
    op.create_table(
        "outbound_messages",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False, unique=True),
        sa.Column("subject", sa.String(length=64), nullable=True),
        sa.Column("destination", sa.String(length=300), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", moment(timezone=True), nullable=True),
        sa.Column("claimed_until", moment(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("created_at", moment(timezone=True), nullable=False),
        sa.Column("updated_at", moment(timezone=True), nullable=False),
    )
    op.create_index("ix_outbound_messages_subject", "outbound_messages", ["subject"])
    op.create_index("ix_outbound_messages_due", "outbound_messages", ["state", "next_attempt_at"])
    op.create_table(
        "outbound_attempts",
        sa.Column("message_id", sa.String(length=64), primary_key=True),
        sa.Column("n", sa.Integer(), primary_key=True),
        sa.Column("at", moment(timezone=True), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("response_excerpt", sa.String(length=1024), nullable=True),
        sa.Column("error", sa.String(length=1000), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("outbound_attempts")
    op.drop_table("outbound_messages")
