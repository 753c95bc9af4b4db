"""provider connections

Revision ID: 0016
Revises: 0015

- provider_connections: a team's connection to GitHub, GitLab, Slack, Linear or Jira, whose
  native webhooks arrive at /webhooks/p/{uid} (docs/providers.md). Soft-deleted like webhooks,
  so the delivery log's records keep what they were delivered to.
- the table bumps config_revision like every configuration table: the evaluator's cached view
  of which team a connection serves, and as which bot, follows a change at once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.store.types

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

TABLE = "provider_connections"
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
        sa.Column("created_at", gateway.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", gateway.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", gateway.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["team_uid"], ["teams.uid"]),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index(f"ix_{TABLE}_team_uid", TABLE, ["team_uid"])
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
    op.drop_index(f"ix_{TABLE}_team_uid", table_name=TABLE)
    op.drop_table(TABLE)
