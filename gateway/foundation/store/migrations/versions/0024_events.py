"""events and event subscriptions

Revision ID: 0024
Revises: 0023

- events: the event log, written in the transaction of the change each event tells
  (docs/events.md).
- event_subscriptions: a team's subscriptions to events, delivered signed to a URL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("team_uid", sa.String(length=64), nullable=True),
        sa.Column("factory_uid", sa.String(length=64), nullable=True),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("at", MOMENT, nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_events_team_seq", "events", ["team_uid", "seq"])
    op.create_table(
        "event_subscriptions",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("team_uid", sa.String(length=64), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=True),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=True),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("previous_secret_encrypted", sa.Text(), nullable=True),
        sa.Column("previous_secret_until", MOMENT, nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(length=500), nullable=True),
        sa.Column("failing_since", MOMENT, nullable=True),
        sa.Column("created_by", sa.String(length=64), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.Column("updated_at", MOMENT, nullable=False),
        sa.Column("deleted_at", MOMENT, nullable=True),
        sa.ForeignKeyConstraint(["team_uid"], ["teams.uid"]),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index("ix_event_subscriptions_team_uid", "event_subscriptions", ["team_uid"])


def downgrade() -> None:
    op.drop_table("event_subscriptions")
    op.drop_table("events")
