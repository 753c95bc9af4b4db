"""console sessions kept on the server

Revision ID: 0015
Revises: 0014

A console login was only an encrypted cookie: logging out deleted the browser's copy, and a copy
kept elsewhere stayed valid for up to 12 hours. Each login now has a row (the hash of the random
session id its cookie carries); logging out deletes it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_at", MOMENT, nullable=False),
        sa.PrimaryKeyConstraint("id_hash"),
    )
    op.create_index("ix_console_sessions_expires_at", "console_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_console_sessions_expires_at", table_name="console_sessions")
    op.drop_table("console_sessions")
