"""runs: one index on factory_uid

Revision ID: 0028
Revises: 0027

- ix_runs_factory_uid goes: ix_runs_factory_created (factory_uid, created_at) answers every
  lookup by factory_uid as well, and each index is one more write per run the evaluator starts.
"""

from __future__ import annotations

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_runs_factory_uid", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_factory_uid", "runs", ["factory_uid"], unique=False)
