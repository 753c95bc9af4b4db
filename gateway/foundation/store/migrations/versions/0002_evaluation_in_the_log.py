"""evaluation state in the delivery log; runs keyed by (delivery, automation); config revision

Revision ID: 0002
Revises: 0001

- deliveries.evaluation ("pending" until evaluated) and evaluated_at: the embedded backend's
  queue is the log itself, so `ingress_outbox` goes (its rows move into the log as pending).
- runs.delivery_id + runs.automation_uid with a unique index replace `automation_runs` (one
  row less per webhook run); attachments.delivery_id points at the payload instead of copying it.
- config_revision, bumped by triggers on every configuration table: the evaluator checks its
  cached automations against one row instead of re-reading them for every batch.
- runs' parent_run_id and task_pending indexes become partial (only children, only runs
  waiting for their task): one index write less each for most runs.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# every table whose rows shape what the evaluator does with a delivery
CONFIG_TABLES = ("webhooks", "factories", "automations", "automation_triggers")
BUMP = "UPDATE config_revision SET value = value + 1 WHERE id = 1"
PENDING = sa.text("evaluation = 'pending'")


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("evaluation", sa.String(length=16), nullable=True))
        batch.add_column(
            sa.Column(
                "evaluated_at",
                gateway.foundation.store.types.UTCDateTime(timezone=True),
                nullable=True,
            )
        )
        batch.create_index(
            "ix_deliveries_pending",
            ["received_at", "delivery_id"],
            sqlite_where=PENDING,
            postgresql_where=PENDING,
        )
    op.execute(
        "UPDATE deliveries SET evaluation = 'evaluated', evaluated_at = received_at "
        "WHERE label = 'Accepted'"
    )
    op.execute(
        "INSERT INTO deliveries (delivery_id, webhook_uid, received_at, size, label, identity, "
        "duplicate_of, payload, evaluation) "
        "SELECT delivery_id, webhook_uid, received_at, size, label, identity, duplicate_of, "
        "payload, CASE WHEN label = 'Accepted' THEN 'pending' END FROM ingress_outbox "
        "WHERE delivery_id NOT IN (SELECT delivery_id FROM deliveries)"
    )
    op.drop_table("ingress_outbox")

    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("delivery_id", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("automation_uid", sa.String(length=64), nullable=True))
    op.execute(
        "UPDATE runs SET delivery_id = (SELECT ar.delivery_id FROM automation_runs ar "
        "WHERE ar.run_id = runs.run_id), automation_uid = (SELECT ar.automation_uid FROM "
        "automation_runs ar WHERE ar.run_id = runs.run_id) "
        "WHERE run_id IN (SELECT run_id FROM automation_runs)"
    )
    op.create_index(
        "ux_runs_delivery_automation", "runs", ["delivery_id", "automation_uid"], unique=True
    )
    op.drop_table("automation_runs")
    op.drop_index("ix_runs_parent_run_id", table_name="runs")
    op.drop_index("ix_runs_task_pending", table_name="runs")
    op.create_index(
        "ix_runs_parent_run_id",
        "runs",
        ["parent_run_id"],
        sqlite_where=sa.text("parent_run_id IS NOT NULL"),
        postgresql_where=sa.text("parent_run_id IS NOT NULL"),
    )
    op.create_index(
        "ix_runs_task_pending",
        "runs",
        ["task_pending"],
        sqlite_where=sa.text("task_pending = 1"),
        postgresql_where=sa.text("task_pending"),
    )

    with op.batch_alter_table("attachments") as batch:
        batch.add_column(sa.Column("delivery_id", sa.String(length=64), nullable=True))

    op.create_table(
        "config_revision",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO config_revision (id, value) VALUES (1, 1)")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION gateway_bump_config_revision() RETURNS trigger LANGUAGE plpgsql "
            f"AS $$ BEGIN {BUMP}; RETURN NULL; END $$"
        )
        for table in CONFIG_TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_bump_config_revision AFTER INSERT OR UPDATE OR DELETE "
                f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION gateway_bump_config_revision()"
            )
    else:
        for table in CONFIG_TABLES:
            for event in ("INSERT", "UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_{event.lower()}_bump_config_revision "
                    f"AFTER {event} ON {table} BEGIN {BUMP}; END"
                )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in CONFIG_TABLES:
            op.execute(f"DROP TRIGGER {table}_bump_config_revision ON {table}")
        op.execute("DROP FUNCTION gateway_bump_config_revision()")
    else:
        for table in CONFIG_TABLES:
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER {table}_{event}_bump_config_revision")
    op.drop_table("config_revision")
    with op.batch_alter_table("attachments") as batch:
        batch.drop_column("delivery_id")

    op.create_table(
        "automation_runs",
        sa.Column("delivery_id", sa.String(length=64), nullable=False),
        sa.Column("automation_uid", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at", gateway.foundation.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.PrimaryKeyConstraint("delivery_id", "automation_uid"),
    )
    op.execute(
        "INSERT INTO automation_runs (delivery_id, automation_uid, run_id, created_at) "
        "SELECT delivery_id, automation_uid, run_id, created_at FROM runs "
        "WHERE delivery_id IS NOT NULL"
    )
    op.drop_index("ux_runs_delivery_automation", table_name="runs")
    for name, column in (
        ("ix_runs_parent_run_id", "parent_run_id"),
        ("ix_runs_task_pending", "task_pending"),
    ):
        op.drop_index(name, table_name="runs")
        op.create_index(name, "runs", [column])
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("automation_uid")
        batch.drop_column("delivery_id")

    op.create_table(
        "ingress_outbox",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("delivery_id", sa.String(length=64), nullable=False),
        sa.Column("webhook_uid", sa.String(length=64), nullable=False),
        sa.Column(
            "received_at", gateway.foundation.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=40), nullable=False),
        sa.Column("identity", sa.String(length=300), nullable=True),
        sa.Column("duplicate_of", sa.String(length=64), nullable=True),
        sa.Column("payload", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("delivery_id"),
    )
    op.execute(
        "INSERT INTO ingress_outbox (delivery_id, webhook_uid, received_at, size, label, "
        "identity, duplicate_of, payload) SELECT delivery_id, webhook_uid, received_at, size, "
        "label, identity, duplicate_of, payload FROM deliveries WHERE evaluation = 'pending'"
    )
    op.execute("DELETE FROM deliveries WHERE evaluation = 'pending'")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_index("ix_deliveries_pending")
        batch.drop_column("evaluated_at")
        batch.drop_column("evaluation")
