"""scoring: what a scorer's labels and passing score made of an attempt

Revision ID: 0023
Revises: 0021

- scoring_attempts.label: the scorer's label the attempt's score falls in (the one reported,
  or the highest label whose score the reported score reaches); NULL for a scorer without
  labels or a failed attempt.
- scoring_attempts.passed: the score reached the scorer's passing score; NULL when the scorer
  has none or the attempt failed.
- scoring_jobs.trigger gains the value "sampled": a job a completed run's sampling queued
  (docs/factory-files.md#scorers).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0021"
branch_labels = None
depends_on = None

TABLE = "scoring_attempts"


def upgrade() -> None:
    op.add_column(TABLE, sa.Column("label", sa.String(length=200), nullable=True))
    op.add_column(TABLE, sa.Column("passed", sa.Boolean(), nullable=True))


def downgrade() -> None:
    for column in ("passed", "label"):
        op.drop_column(TABLE, column)
