"""provider connections: reply credentials and templates

Revision ID: 0019
Revises: 0018

- credentials_encrypted: the credentials replies are posted with (GitHub token or App, GitLab
  and Linear tokens, Slack bot token, Jira email and token), one JSON document encrypted with
  the secret box like team secrets; NULL: the connection only receives (docs/providers.md).
- api_base_url: the provider's API root when it is not the public one (GitHub Enterprise,
  GitLab self-managed, the Jira site).
- reply_templates: the connection's own reply templates ({"started", "ended"}), when any.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

TABLE = "provider_connections"


def upgrade() -> None:
    op.add_column(TABLE, sa.Column("credentials_encrypted", sa.Text(), nullable=True))
    op.add_column(TABLE, sa.Column("api_base_url", sa.String(length=500), nullable=True))
    op.add_column(TABLE, sa.Column("reply_templates", sa.JSON(), nullable=True))


def downgrade() -> None:
    for column in ("reply_templates", "api_base_url", "credentials_encrypted"):
        op.drop_column(TABLE, column)
