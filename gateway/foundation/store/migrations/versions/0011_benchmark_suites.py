"""benchmark suites, their tasks, runs and trials

Revision ID: 0011
Revises: 0010

- benchmark_suites: a factory's suite (soft-deleted: deleted_at) with its configurations (what a
  trial runs with: a name, an optional model, attempts).
- benchmark_tasks: a suite's tasks (title unique in the suite).
- benchmark_runs: one launch of a suite: every task x configuration x attempt as a trial.
- benchmark_trials: one agent run of a task under a configuration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gateway.foundation.store.types import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "benchmark_suites",
        sa.Column("uid", sa.String(length=64), primary_key=True),
        sa.Column("factory_uid", sa.String(length=64), nullable=False, index=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("configurations", sa.JSON(), nullable=False),
        sa.Column("created_by_uid", sa.String(length=64), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", UTCDateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "benchmark_tasks",
        sa.Column("uid", sa.String(length=64), primary_key=True),
        sa.Column("suite_uid", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("success_criteria", sa.Text(), nullable=False),
        sa.Column("source_run_id", sa.String(length=64), nullable=True),
        sa.Column("starting_repo_refs", sa.JSON(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("suite_uid", "title", name="ux_benchmark_tasks_title"),
    )
    op.create_table(
        "benchmark_runs",
        sa.Column("uid", sa.String(length=64), primary_key=True),
        sa.Column("suite_uid", sa.String(length=64), nullable=False, index=True),
        sa.Column("factory_uid", sa.String(length=64), nullable=False),
        sa.Column("configurations", sa.JSON(), nullable=False),
        sa.Column("created_by_uid", sa.String(length=64), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("cancelled_at", UTCDateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "benchmark_trials",
        sa.Column("uid", sa.String(length=64), primary_key=True),
        sa.Column("benchmark_run_uid", sa.String(length=64), nullable=False, index=True),
        sa.Column("task_uid", sa.String(length=64), nullable=False),
        sa.Column("task_title", sa.String(length=200), nullable=False),
        sa.Column("configuration", sa.String(length=100), nullable=False),
        sa.Column("attempt_number", sa.Integer(), nullable=False),
        sa.Column("agent_run_id", sa.String(length=64), nullable=False, index=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("benchmark_trials")
    op.drop_table("benchmark_runs")
    op.drop_table("benchmark_tasks")
    op.drop_table("benchmark_suites")
