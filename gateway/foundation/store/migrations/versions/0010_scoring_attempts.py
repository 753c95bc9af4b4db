"""scoring jobs executed by runners, and their attempts

Revision ID: 0010
Revises: 0009

- scoring_jobs.runner_uid, claimed_at: the runner that claimed a job and when (a claim older than
  the run lease may be taken again).
- scoring_attempts: one per reported outcome of a job: its score (0 to 1) and reasoning, or why
  it failed. A scorer's results, metrics and a run's current scores are read from here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gateway.foundation.store.types import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("scoring_jobs", sa.Column("runner_uid", sa.String(length=64), nullable=True))
    op.add_column(
        "scoring_jobs", sa.Column("claimed_at", UTCDateTime(timezone=True), nullable=True)
    )
    op.create_table(
        "scoring_attempts",
        sa.Column("attempt_id", sa.String(length=64), primary_key=True),
        sa.Column("job_id", sa.String(length=64), nullable=False),
        sa.Column("scorer_uid", sa.String(length=64), nullable=False),
        sa.Column("scorer_version", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("reasoning", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempted_at", UTCDateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_scoring_attempts_scorer",
        "scoring_attempts",
        ["scorer_uid", "attempted_at", "attempt_id"],
    )
    op.create_index("ix_scoring_attempts_run", "scoring_attempts", ["run_id", "scorer_uid"])


def downgrade() -> None:
    op.drop_index("ix_scoring_attempts_run", table_name="scoring_attempts")
    op.drop_index("ix_scoring_attempts_scorer", table_name="scoring_attempts")
    op.drop_table("scoring_attempts")
    op.drop_column("scoring_jobs", "claimed_at")
    op.drop_column("scoring_jobs", "runner_uid")
