"""the other files of a factory's skills

Revision ID: 0025
Revises: 0026

- factory_skills.files: the text files of a skill's directory besides its SKILL.md, by path
  under it, as the tree applied them (NULL: none), so a plan compares them and an apply that
  changes only them stores the change (docs/factory-files.md, "Skills").
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0026"  # landed after 0026: a store at 0026 moves on to it
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("factory_skills") as batch:
        batch.add_column(sa.Column("files", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("factory_skills") as batch:
        batch.drop_column("files")
