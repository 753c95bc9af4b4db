"""work item follow-ups by delivery

Revision ID: 0026
Revises: 0024

- ix_work_item_follow_ups_delivery: the delivery log lists, beside a delivery's runs, the work
  items it continued (a follow-up of their run); read by delivery id, a page at a time.
"""

from __future__ import annotations

from alembic import op

revision = "0026"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_work_item_follow_ups_delivery", "work_item_follow_ups", ["delivery_id"])


def downgrade() -> None:
    op.drop_index("ix_work_item_follow_ups_delivery", table_name="work_item_follow_ups")
