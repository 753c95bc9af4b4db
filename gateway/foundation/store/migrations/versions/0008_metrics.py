"""factory metrics: the de-duplicated pull requests, and the index metrics start from

Revision ID: 0008
Revises: 0007

- pull_requests: one row per pull request URL at its first appearance among the run artifacts,
  filled here from the artifacts already stored (docs/metrics.md).
- pr_costs and pull_requests.cost_usd: each PR's attributed cost (its tree's spend over the
  tree's PR count), per component and in all, filled here from the usage already stored.
- run_usage: the run's factory, creation time, tree, source, user and agent on every row
  (filled here for the rows already stored), so spend is windowed and grouped without a join.
- indexes for the range scans of every metric and cost query; on PostgreSQL they include the
  grouped columns, so the scans read no table rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)

# first and latest artifact of each URL; the first names the run (and tree) the PR belongs to
BACKFILL = """
INSERT INTO pull_requests (url, factory_uid, team_uid, run_id, root_run_id, root_created_at,
                           artifact_uid, first_seen_at, updated_at, title, branch, state)
SELECT f.url, r.factory_uid, r.team_uid, f.run_id, r.root_run_id, root.created_at,
       f.artifact_uid, f.created_at, l.created_at, l.title, l.branch, l.pr_state
FROM (SELECT url, run_id, artifact_uid, created_at,
             ROW_NUMBER() OVER (PARTITION BY url ORDER BY created_at, artifact_uid) AS n
      FROM run_artifacts WHERE artifact_type = 'PULL_REQUEST' AND url IS NOT NULL) f
JOIN (SELECT url, created_at, title, branch, pr_state,
             ROW_NUMBER() OVER (PARTITION BY url ORDER BY created_at DESC, artifact_uid DESC) AS n
      FROM run_artifacts WHERE artifact_type = 'PULL_REQUEST' AND url IS NOT NULL) l
  ON l.url = f.url AND l.n = 1
JOIN runs r ON r.run_id = f.run_id
JOIN runs root ON root.run_id = r.root_run_id
WHERE f.n = 1
"""
USAGE_COLUMNS = {
    "factory_uid": "factory_uid",
    "run_created_at": "created_at",
    "root_run_id": "root_run_id",
    "source": "source",
    "user_uid": "CASE WHEN creator_kind = 'user' THEN creator_uid END",
    "agent_uid": "agent_uid",
}
BACKFILL_USAGE = "UPDATE run_usage SET " + ", ".join(
    f"{column} = (SELECT {value} FROM runs WHERE runs.run_id = run_usage.run_id)"
    for column, value in USAGE_COLUMNS.items()
)
USAGE_FIGURES = ["model_id", "cost_usd", "input_tokens", "output_tokens"]
PR_FIGURES = ["url", "root_created_at", "state", "additions", "deletions", "cost_usd"]
# each PR's share of its tree's spend, per component, then in all
BACKFILL_PR_COSTS = (
    "UPDATE pull_requests SET tree_pr_count = (SELECT count(*) FROM pull_requests AS same "
    "WHERE same.root_run_id = pull_requests.root_run_id)",
    "INSERT INTO pr_costs (url, component, factory_uid, first_seen_at, cost_usd) "
    "SELECT p.url, s.component, p.factory_uid, p.first_seen_at, s.cost / p.tree_pr_count "
    "FROM pull_requests p JOIN (SELECT root_run_id, component, sum(cost_usd) AS cost "
    "FROM run_usage GROUP BY root_run_id, component) s ON s.root_run_id = p.root_run_id",
    "UPDATE pull_requests SET cost_usd = COALESCE((SELECT sum(cost_usd) FROM pr_costs "
    "WHERE pr_costs.url = pull_requests.url), 0)",
)
RUN_GROUPS = ["creator_kind", "creator_uid", "state", "source", "agent_uid"]


def upgrade() -> None:
    op.create_table(
        "pull_requests",
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=True),
        sa.Column("team_uid", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("root_run_id", sa.String(length=64), nullable=False),
        sa.Column("root_created_at", MOMENT, nullable=False),
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
        sa.Column("tree_pr_count", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("cost_usd", sa.Float(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("url"),
    )
    op.create_table(
        "pr_costs",
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("component", sa.String(length=64), nullable=False),
        sa.Column("factory_uid", sa.String(length=64), nullable=True),
        sa.Column("first_seen_at", MOMENT, nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("url", "component"),
    )
    op.create_index("ix_pull_requests_root_run_id", "pull_requests", ["root_run_id"])
    op.create_index(
        "ix_pull_requests_factory_seen",
        "pull_requests",
        ["factory_uid", "first_seen_at"],
        postgresql_include=PR_FIGURES,
    )
    op.create_index(
        "ix_pull_requests_factory_updated", "pull_requests", ["factory_uid", "updated_at"]
    )
    op.create_index(
        "ix_runs_factory_created",
        "runs",
        ["factory_uid", "created_at"],
        postgresql_include=RUN_GROUPS,
    )
    op.add_column("run_usage", sa.Column("factory_uid", sa.String(length=64), nullable=True))
    op.add_column("run_usage", sa.Column("run_created_at", MOMENT, nullable=True))
    op.add_column("run_usage", sa.Column("root_run_id", sa.String(length=64), nullable=True))
    op.add_column("run_usage", sa.Column("source", sa.String(length=32), nullable=True))
    op.add_column("run_usage", sa.Column("user_uid", sa.String(length=64), nullable=True))
    op.add_column("run_usage", sa.Column("agent_uid", sa.String(length=64), nullable=True))
    op.execute(sa.text(BACKFILL_USAGE))
    op.execute(sa.text(BACKFILL))
    for statement in BACKFILL_PR_COSTS:
        op.execute(sa.text(statement))
    op.create_index(
        "ix_pr_costs_factory_seen",
        "pr_costs",
        ["factory_uid", "first_seen_at"],
        postgresql_include=["component", "cost_usd"],
    )
    op.create_index(
        "ix_run_usage_factory_created",
        "run_usage",
        ["factory_uid", "run_created_at"],
        postgresql_include=[*USAGE_FIGURES, "source", "user_uid", "agent_uid"],
    )
    op.create_index(
        "ix_run_usage_root",
        "run_usage",
        ["root_run_id"],
        postgresql_include=["component", "cost_usd"],
    )


def downgrade() -> None:
    op.drop_index("ix_run_usage_root", table_name="run_usage")
    op.drop_index("ix_run_usage_factory_created", table_name="run_usage")
    with op.batch_alter_table("run_usage") as batch:
        for column in USAGE_COLUMNS:
            batch.drop_column(column)
    op.drop_index("ix_runs_factory_created", table_name="runs")
    op.drop_table("pr_costs")
    op.drop_table("pull_requests")
