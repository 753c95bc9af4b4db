"""attachment content, pinned workers, debug sessions, skill actions, usage snapshots

Revision ID: 0016
Revises: 0015

- blobs: content the service stores itself (attachments uploaded to prepared upload URLs, files
  a run was created with) when GATEWAY_ATTACHMENT_STORE is `database`; the filesystem and
  S3-compatible stores keep theirs elsewhere under the same keys.
- attachments.blob_key, attachments.uploaded_at: where an attachment's content is, once
  uploaded (null: prepared, nothing uploaded yet).
- runs.worker_host: the self-hosted worker a run is pinned to (null: any runner of the team's
  pool); runs.debug_session (`requested` | `open`) and runs.debug_runner_uid: a debug session of
  a failed run, asked of the runner that ran it.
- runners.worker_id: the stable id a self-hosted worker registers under (runs name it in
  worker_host); runners.debug_sessions: it opens debug sessions of the runs it failed.
- run_messages.action: what a runner reported the agent did (a `read_skill` action).
- run_usage.attempt, run_usage.unreported: usage reports are cumulative snapshots, the latest
  per (run, claim attempt, model) standing; `unreported` lists the metrics a snapshot did not
  carry (null: all of them), which read as unavailable rather than 0.
Plain nullable columns and one new table: no table rebuild.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None
MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("key", sa.String(length=200), primary_key=True),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("created_at", MOMENT, nullable=False),
    )
    op.add_column("attachments", sa.Column("blob_key", sa.String(length=200), nullable=True))
    op.add_column("attachments", sa.Column("uploaded_at", MOMENT, nullable=True))
    op.add_column("runs", sa.Column("worker_host", sa.String(length=200), nullable=True))
    op.add_column("runs", sa.Column("debug_session", sa.String(length=16), nullable=True))
    op.add_column("runs", sa.Column("debug_runner_uid", sa.String(length=64), nullable=True))
    op.add_column("runners", sa.Column("worker_id", sa.String(length=200), nullable=True))
    op.add_column(
        "runners",
        sa.Column("debug_sessions", sa.Boolean(), nullable=False, server_default=sa.text("false")),
    )
    op.create_index("ix_runners_worker_id", "runners", ["team_uid", "worker_id"])
    op.add_column("run_messages", sa.Column("action", sa.JSON(), nullable=True))
    op.add_column("run_usage", sa.Column("attempt", sa.Integer(), nullable=True))
    op.add_column("run_usage", sa.Column("unreported", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column("run_usage", "unreported")
    op.drop_column("run_usage", "attempt")
    op.drop_column("run_messages", "action")
    op.drop_index("ix_runners_worker_id", table_name="runners")
    op.drop_column("runners", "debug_sessions")
    op.drop_column("runners", "worker_id")
    op.drop_column("runs", "debug_runner_uid")
    op.drop_column("runs", "debug_session")
    op.drop_column("runs", "worker_host")
    op.drop_column("attachments", "uploaded_at")
    op.drop_column("attachments", "blob_key")
    op.drop_table("blobs")
