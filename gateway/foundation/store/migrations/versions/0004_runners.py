"""runs execute: leases on runs, runners, the run timeline, artifacts and reported usage

Revision ID: 0004
Revises: 0003

- runs: runner_uid, lease_expires_at, lease_renewed_at, attempts (0 for existing runs), and two
  partial indexes: QUEUED runs by (team_uid, created_at), for claims, and the leased ones by
  lease_expires_at, for expiry.
- runners, run_events, run_artifacts, run_usage (docs/runs-and-tasks.md).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)
QUEUED = sa.text("state = 'QUEUED'")
LEASED = sa.text("lease_expires_at IS NOT NULL")


def upgrade() -> None:
    op.add_column("runs", sa.Column("runner_uid", sa.String(length=64), nullable=True))
    op.add_column("runs", sa.Column("lease_expires_at", MOMENT, nullable=True))
    op.add_column("runs", sa.Column("lease_renewed_at", MOMENT, nullable=True))
    op.add_column(
        "runs", sa.Column("attempts", sa.Integer(), nullable=False, server_default=sa.text("0"))
    )
    op.create_index(
        "ix_runs_queued",
        "runs",
        ["team_uid", "created_at"],
        sqlite_where=QUEUED,
        postgresql_where=QUEUED,
    )
    op.create_index(
        "ix_runs_leased",
        "runs",
        ["lease_expires_at"],
        sqlite_where=LEASED,
        postgresql_where=LEASED,
    )
    op.create_table(
        "runners",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("team_uid", sa.String(length=64), nullable=False),
        sa.Column("agent_uid", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=True),
        sa.Column("factory_uid", sa.String(length=64), nullable=True),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=True),
        sa.Column("started_at", MOMENT, nullable=False),
        sa.Column("last_seen_at", MOMENT, nullable=False),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index("ix_runners_team_uid", "runners", ["team_uid"])
    op.create_table(
        "run_events",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("at", MOMENT, nullable=False),
        sa.Column("runner_uid", sa.String(length=64), nullable=True),
        sa.Column("reason", sa.String(length=500), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_run_events_run_id", "run_events", ["run_id"])
    op.create_table(
        "run_artifacts",
        sa.Column("artifact_uid", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("artifact_type", sa.String(length=16), nullable=False),
        sa.Column("filename", sa.String(length=300), nullable=True),
        sa.Column("filepath", sa.String(length=1000), nullable=True),
        sa.Column("mime_type", sa.String(length=100), nullable=True),
        sa.Column("size", sa.Integer(), nullable=True),
        sa.Column("content", sa.LargeBinary(), nullable=True),
        sa.Column("title", sa.String(length=500), nullable=True),
        sa.Column("description", sa.String(length=2000), nullable=True),
        sa.Column("url", sa.String(length=2000), nullable=True),
        sa.Column("branch", sa.String(length=300), nullable=True),
        sa.Column("pr_state", sa.String(length=16), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.PrimaryKeyConstraint("artifact_uid"),
    )
    op.create_index("ix_run_artifacts_run_id", "run_artifacts", ["run_id"])
    op.create_index("ix_run_artifacts_url", "run_artifacts", ["url"])
    op.create_table(
        "run_usage",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("model_id", sa.String(length=200), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("component", sa.String(length=64), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("reported_at", MOMENT, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_run_usage_run_id", "run_usage", ["run_id"])


def downgrade() -> None:
    for table in ("run_usage", "run_artifacts", "run_events", "runners"):
        op.drop_table(table)
    op.drop_index("ix_runs_leased", table_name="runs")
    op.drop_index("ix_runs_queued", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        for column in ("attempts", "lease_renewed_at", "lease_expires_at", "runner_uid"):
            batch.drop_column(column)
