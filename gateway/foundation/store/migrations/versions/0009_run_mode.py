"""the mode a run's first execution runs in

Revision ID: 0009
Revises: 0008

- runs.mode: a scheduled agent's `mode` (`plan`, `orchestrate`) handed to the runner that claims
  the run; null is `normal`. A follow-up's mode (run_messages.mode) takes over for the execution
  it starts. A plain nullable column: added in place, no table rebuild.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("mode", sa.String(length=16), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "mode")
