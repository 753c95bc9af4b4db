"""agents managed through the API; the executing agent and failure time of runs; scorers and
their scoring jobs

Revision ID: 0003
Revises: 0002

- agents: description, agent_type, factory_uid, run_defaults, updated_at (filled from
  created_at). Columns are added in place: a batch recreate of `agents` on SQLite would drop
  and rename a table that factories refer to.
- runs.agent_uid: the agent executing the run; filled for work dispatched to a factory (top-level
  factory runs: the factory's foreman) and for other runs created with an agent key (that agent).
- runs.failed_at: when the run entered FAILED; filled from updated_at for FAILED runs (the
  best record of the moment there is).
- scorers and scoring_jobs.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)
QUEUED = sa.text("status = 'queued'")


def upgrade() -> None:
    op.add_column("agents", sa.Column("description", sa.Text(), nullable=True))
    op.add_column("agents", sa.Column("agent_type", sa.String(length=16), nullable=True))
    op.add_column("agents", sa.Column("factory_uid", sa.String(length=64), nullable=True))
    op.add_column("agents", sa.Column("run_defaults", sa.JSON(), nullable=True))
    op.add_column("agents", sa.Column("updated_at", MOMENT, nullable=True))
    op.create_index("ix_agents_factory_uid", "agents", ["factory_uid"])
    op.execute("UPDATE agents SET updated_at = created_at")

    op.add_column("runs", sa.Column("agent_uid", sa.String(length=64), nullable=True))
    op.add_column("runs", sa.Column("failed_at", MOMENT, nullable=True))
    op.execute("UPDATE runs SET agent_uid = creator_uid WHERE creator_kind = 'agent'")
    op.execute(
        "UPDATE runs SET agent_uid = (SELECT f.foreman_agent_uid FROM factories f"
        " WHERE f.uid = runs.factory_uid) WHERE factory_uid IS NOT NULL AND parent_run_id IS NULL"
    )
    op.execute("UPDATE runs SET failed_at = updated_at WHERE state = 'FAILED'")

    op.create_table(
        "scorers",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("scope_mode", sa.String(length=16), nullable=False),
        sa.Column("agent_uids", sa.JSON(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("self_improvement_enabled", sa.Boolean(), nullable=False),
        sa.Column("benchmark_managed", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_by_uid", sa.String(length=64), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.Column("updated_at", MOMENT, nullable=False),
        sa.ForeignKeyConstraint(["factory_uid"], ["factories.uid"]),
        sa.PrimaryKeyConstraint("uid"),
    )
    op.create_index("ix_scorers_factory_uid", "scorers", ["factory_uid"])
    op.create_table(
        "scoring_jobs",
        sa.Column("job_id", sa.String(length=64), nullable=False),
        sa.Column("scorer_uid", sa.String(length=64), nullable=False),
        sa.Column("scorer_version", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("requested_by_uid", sa.String(length=64), nullable=True),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
        sa.ForeignKeyConstraint(["scorer_uid"], ["scorers.uid"]),
        sa.PrimaryKeyConstraint("job_id"),
    )
    op.create_index("ix_scoring_jobs_run_id", "scoring_jobs", ["run_id"])
    op.create_index(
        "ux_scoring_jobs_queued",
        "scoring_jobs",
        ["scorer_uid", "run_id"],
        unique=True,
        sqlite_where=QUEUED,
        postgresql_where=QUEUED,
    )


def downgrade() -> None:
    op.drop_table("scoring_jobs")
    op.drop_table("scorers")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("failed_at")
        batch.drop_column("agent_uid")
    op.drop_index("ix_agents_factory_uid", table_name="agents")
    for column in ("updated_at", "run_defaults", "factory_uid", "agent_type", "description"):
        op.drop_column("agents", column)
