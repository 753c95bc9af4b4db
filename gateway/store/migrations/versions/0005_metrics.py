"""factory metrics: the de-duplicated pull requests, and the index metrics start from

Revision ID: 0005_metrics
Revises: 0004

- pull_requests: one row per pull request URL at its first appearance among the run artifacts,
  filled here from the artifacts already stored (docs/metrics.md).
- runs: (factory_uid, created_at), the range scan of every metric and cost query.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.store.types

revision = "0005_metrics"
down_revision = "0004"
branch_labels = None
depends_on = None

MOMENT = gateway.store.types.UTCDateTime(timezone=True)

# first and latest artifact of each URL; the first names the run (and tree) the PR belongs to
BACKFILL = """
INSERT INTO pull_requests (url, factory_uid, team_uid, run_id, root_run_id, artifact_uid,
                           first_seen_at, updated_at, title, branch, state)
SELECT f.url, r.factory_uid, r.team_uid, f.run_id, r.root_run_id, f.artifact_uid,
       f.created_at, l.created_at, l.title, l.branch, l.pr_state
FROM (SELECT url, run_id, artifact_uid, created_at,
             ROW_NUMBER() OVER (PARTITION BY url ORDER BY created_at, artifact_uid) AS n
      FROM run_artifacts WHERE artifact_type = 'PULL_REQUEST' AND url IS NOT NULL) f
JOIN (SELECT url, created_at, title, branch, pr_state,
             ROW_NUMBER() OVER (PARTITION BY url ORDER BY created_at DESC, artifact_uid DESC) AS n
      FROM run_artifacts WHERE artifact_type = 'PULL_REQUEST' AND url IS NOT NULL) l
  ON l.url = f.url AND l.n = 1
JOIN runs r ON r.run_id = f.run_id
WHERE f.n = 1
"""


def upgrade() -> None:
    op.create_table(
        "pull_requests",
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=True),
        sa.Column("team_uid", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("root_run_id", sa.String(length=64), nullable=False),
        sa.Column("artifact_uid", sa.String(length=64), nullable=False),
        sa.Column("first_seen_at", MOMENT, nullable=False),
        sa.Column("updated_at", MOMENT, nullable=False),
        sa.Column("title", sa.String(length=500), nullable=True),
        sa.Column("branch", sa.String(length=300), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=True),
        sa.Column("additions", sa.Integer(), nullable=True),
        sa.Column("deletions", sa.Integer(), nullable=True),
        sa.Column("changed_files", sa.Integer(), nullable=True),
        sa.Column("merged_at", MOMENT, nullable=True),
        sa.Column("detail_updated_at", MOMENT, nullable=True),
        sa.PrimaryKeyConstraint("url"),
    )
    op.create_index("ix_pull_requests_root_run_id", "pull_requests", ["root_run_id"])
    op.create_index(
        "ix_pull_requests_factory_seen", "pull_requests", ["factory_uid", "first_seen_at"]
    )
    op.create_index(
        "ix_pull_requests_factory_updated", "pull_requests", ["factory_uid", "updated_at"]
    )
    op.create_index("ix_runs_factory_created", "runs", ["factory_uid", "created_at"])
    op.execute(sa.text(BACKFILL))


def downgrade() -> None:
    op.drop_index("ix_runs_factory_created", table_name="runs")
    op.drop_table("pull_requests")
