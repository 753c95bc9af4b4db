"""work items: what the runs of a provider event are about, and the follow-ups that continued it

Revision ID: 0021
Revises: 0020

- work_items: one per (factory, provider, ref): a GitHub issue or pull request, a GitLab issue
  or merge request, a Slack thread, a Linear or Jira issue (docs/providers.md#work-items). Its
  `target` is where replies go (gateway.webhook_gateway.replies.targets), its `stage` moves with its
  runs, `run_id` is the run later activity continues, `followup_count` how often it did.
- work_item_follow_ups: the deliveries that continued a work item, one each (the unique key
  stands behind the delivery log's claim), and the provider's message when one message comes
  as several deliveries (Slack's `app_mention` and `message` of one message).
- runs.work_item_id: the work item a run belongs to.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gateway.foundation.store.types import UTCDateTime

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "work_items",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("team_uid", sa.String(length=64), nullable=False),
        sa.Column(
            "factory_uid", sa.String(length=64), sa.ForeignKey("factories.uid"), nullable=False
        ),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("ref", sa.String(length=500), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=True),
        sa.Column("target", sa.JSON(), nullable=True),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("followup_count", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("ref", "provider", "factory_uid", name="ux_work_items_source"),
    )
    op.create_index("ix_work_items_factory_created", "work_items", ["factory_uid", "created_at"])
    op.create_table(
        "work_item_follow_ups",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column(
            "work_item_id", sa.String(length=64), sa.ForeignKey("work_items.id"), nullable=False
        ),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("delivery_id", sa.String(length=64), nullable=False),
        sa.Column("message_ref", sa.String(length=200), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("work_item_id", "delivery_id", name="ux_work_item_follow_ups"),
    )
    op.create_index("ix_work_item_follow_ups_message", "work_item_follow_ups", ["message_ref"])
    op.add_column("runs", sa.Column("work_item_id", sa.String(length=64), nullable=True))
    op.create_index(
        "ix_runs_work_item_id",
        "runs",
        ["work_item_id"],
        sqlite_where=sa.text("work_item_id IS NOT NULL"),
        postgresql_where=sa.text("work_item_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_runs_work_item_id", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("work_item_id")
    op.drop_index("ix_work_item_follow_ups_message", table_name="work_item_follow_ups")
    op.drop_table("work_item_follow_ups")
    op.drop_index("ix_work_items_factory_created", table_name="work_items")
    op.drop_table("work_items")
