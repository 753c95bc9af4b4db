"""provider connections; automation schedules

Revision ID: 0018
Revises: 0017

- provider_connections: a team's connection to GitHub, GitLab, Slack, Linear or Jira, whose
  native webhooks arrive at /webhooks/p/{uid} (docs/providers.md). Soft-deleted like webhooks,
  so the delivery log's records keep what they were delivered to.
- the table bumps config_revision like every configuration table: the evaluator's cached view
  of which team a connection serves, and as which bot, follows a change at once.
- automation_schedules: the inline `schedule` triggers of automations, one row per schedule
  with its next slot, claimed by the scheduler like a scheduled agent's (docs/schedules.md).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

TABLE = "provider_connections"
SCHEDULES = "automation_schedules"
BUMP = "UPDATE config_revision SET value = value + 1 WHERE id = 1"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("team_uid", sa.String(length=64), nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=True),
        sa.Column("secret_name", sa.String(length=200), nullable=True),
        sa.Column("bot", sa.String(length=200), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("config_version", sa.Integer(), nullable=False),
        sa.Column(
            "created_at", gateway.foundation.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", gateway.foundation.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "deleted_at", gateway.foundation.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.ForeignKeyConstraint(["team_uid"], ["teams.uid"]),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index(f"ix_{TABLE}_team_uid", TABLE, ["team_uid"])
    op.create_table(
        SCHEDULES,
        sa.Column("automation_uid", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("cron", sa.String(length=200), nullable=False),
        sa.Column(
            "next_run_at", gateway.foundation.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "last_ran_at", gateway.foundation.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("last_run_id", sa.String(length=64), nullable=True),
        sa.Column("last_spawn_error", sa.String(length=2000), nullable=True),
        sa.PrimaryKeyConstraint("automation_uid", "name"),
    )
    op.create_index(f"ix_{SCHEDULES}_next_run_at", SCHEDULES, ["next_run_at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"CREATE TRIGGER {TABLE}_bump_config_revision AFTER INSERT OR UPDATE OR DELETE "
            f"ON {TABLE} FOR EACH STATEMENT EXECUTE FUNCTION gateway_bump_config_revision()"
        )
    else:
        for event in ("INSERT", "UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {TABLE}_{event.lower()}_bump_config_revision "
                f"AFTER {event} ON {TABLE} BEGIN {BUMP}; END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP TRIGGER {TABLE}_bump_config_revision ON {TABLE}")
    else:
        for event in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER {TABLE}_{event}_bump_config_revision")
    op.drop_index(f"ix_{SCHEDULES}_next_run_at", table_name=SCHEDULES)
    op.drop_table(SCHEDULES)
    op.drop_index(f"ix_{TABLE}_team_uid", table_name=TABLE)
    op.drop_table(TABLE)
