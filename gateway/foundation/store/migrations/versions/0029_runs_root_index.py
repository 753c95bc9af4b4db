"""runs: ix_runs_root_run_id holds the runs that have a parent

Revision ID: 0029
Revises: 0028

- ix_runs_root_run_id becomes partial (parent_run_id IS NOT NULL). A root run's root_run_id
  is its own run_id, which the primary key finds already; the one lookup by root_run_id
  (cancelling a run's tree) wants the descendants. Most runs are roots (every run a delivery
  starts), and each entry was a write per run for nothing.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_runs_root_run_id", table_name="runs")
    op.create_index(
        "ix_runs_root_run_id",
        "runs",
        ["root_run_id"],
        sqlite_where=sa.text("parent_run_id IS NOT NULL"),
        postgresql_where=sa.text("parent_run_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_runs_root_run_id", table_name="runs")
    op.create_index("ix_runs_root_run_id", "runs", ["root_run_id"], unique=False)
