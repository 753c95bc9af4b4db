"""factory inbox and scheduled agents

Revision ID: 0006
Revises: 0005

- inbox_notifications, inbox_recipients (docs/inbox.md).
- scheduled_agents (docs/schedules.md).
- runs: a partial index on session_id, for the public shared-session lookup.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)
HAS_SESSION = sa.text("session_id IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "inbox_notifications",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("task_uid", sa.String(length=64), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.Column("resolved_at", MOMENT, nullable=True),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index(
        "ix_inbox_notifications_factory_created",
        "inbox_notifications",
        ["factory_uid", "created_at"],
    )
    op.create_index("ix_inbox_notifications_run_id", "inbox_notifications", ["run_id"])
    op.create_index("ix_inbox_notifications_task_uid", "inbox_notifications", ["task_uid"])
    op.create_table(
        "inbox_recipients",
        sa.Column("notification_uid", sa.String(length=64), nullable=False),
        sa.Column("user_uid", sa.String(length=64), nullable=False),
        sa.Column("read_at", MOMENT, nullable=True),
        sa.ForeignKeyConstraint(["notification_uid"], ["inbox_notifications.uid"]),
        sa.PrimaryKeyConstraint("notification_uid", "user_uid"),
    )
    op.create_index("ix_inbox_recipients_user", "inbox_recipients", ["user_uid"])
    op.create_table(
        "scheduled_agents",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("team_uid", sa.String(length=64), nullable=False),
        sa.Column("owner_kind", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("cron_schedule", sa.String(length=200), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("agent_config", sa.JSON(), nullable=True),
        sa.Column("agent_uid", sa.String(length=64), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by_kind", sa.String(length=16), nullable=False),
        sa.Column("created_by_uid", sa.String(length=64), nullable=False),
        sa.Column("updated_by_kind", sa.String(length=16), nullable=False),
        sa.Column("updated_by_uid", sa.String(length=64), nullable=False),
        sa.Column("next_run_at", MOMENT, nullable=True),
        sa.Column("last_ran_at", MOMENT, nullable=True),
        sa.Column("last_run_id", sa.String(length=64), nullable=True),
        sa.Column("last_spawn_error", sa.String(length=2000), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.Column("updated_at", MOMENT, nullable=False),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index("ix_scheduled_agents_team_uid", "scheduled_agents", ["team_uid"])
    op.create_index("ix_scheduled_agents_next_run_at", "scheduled_agents", ["next_run_at"])
    op.create_index(
        "ix_runs_session_id",
        "runs",
        ["session_id"],
        sqlite_where=HAS_SESSION,
        postgresql_where=HAS_SESSION,
    )


def downgrade() -> None:
    op.drop_index("ix_runs_session_id", table_name="runs")
    op.drop_table("scheduled_agents")
    op.drop_table("inbox_recipients")
    op.drop_table("inbox_notifications")
