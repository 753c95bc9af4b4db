"""signature schemes stored under the names factory files use

Revision ID: 0014
Revises: 0013

- webhooks.signature_scheme: `standard-webhooks` becomes `standard_webhooks`, the name factory
  files write; the API and files still accept the hyphen as an alias
  (gateway/webhook_gateway/signatures). Values only: no column changes.
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "UPDATE webhooks SET signature_scheme = 'standard_webhooks' "
        "WHERE signature_scheme = 'standard-webhooks'"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE webhooks SET signature_scheme = 'standard-webhooks' "
        "WHERE signature_scheme = 'standard_webhooks'"
    )
