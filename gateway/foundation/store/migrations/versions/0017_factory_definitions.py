"""what factory definition files declare; every trigger kind in one canonical form

Revision ID: 0017
Revises: 0016

- factories: what factory.yaml declares (description, credential_strategy, repositories,
  secrets, mcp_servers, cloud_providers, integrations, agent_defaults, code_forges,
  schema_version) and when a definition was last applied.
- agents: definition_name (the agents/<name>/ directory of a factory's tree) and definition
  (what the file says beyond the columns).
- automations: agent_uid (the agent its runs go to), agent_config (what its runs carry),
  definition (a file automation's layers). `triggers` is rewritten in factory_format's canonical
  form: a webhook trigger `{filter: {webhook_ids: [uid], payload: P}}` becomes
  `{filter: {webhook_ids: {in: [uid]}}, payload: P}` (an empty payload is left out).
- scorers: definition_name, description, model_id, labels, passing_score, sampling_rate,
  output.
- benchmark_suites: definition_name, agent_uid; benchmark_tasks: slug, position.
- factory_runners and factory_skills: the runner configurations and skills of a tree.

Columns are added and dropped in place (a batch recreate on SQLite would drop and rename tables
others refer to).
The downgrade gives webhook triggers their old shape back, one trigger per webhook; triggers of
other providers, which the old shape cannot hold, stay as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

import gateway.foundation.store.types

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

MOMENT = gateway.foundation.store.types.UTCDateTime(timezone=True)

FACTORY_COLUMNS = (
    ("description", sa.Text()),
    ("credential_strategy", sa.String(length=16)),
    ("repositories", sa.JSON()),
    ("secrets", sa.JSON()),
    ("mcp_servers", sa.JSON()),
    ("cloud_providers", sa.JSON()),
    ("integrations", sa.JSON()),
    ("agent_defaults", sa.JSON()),
    ("code_forges", sa.JSON()),
    ("schema_version", sa.String(length=32)),
    ("definition_applied_at", MOMENT),
)
ADDED: dict[str, tuple[tuple[str, Any], ...]] = {
    "factories": FACTORY_COLUMNS,
    "agents": (("definition_name", sa.String(length=200)), ("definition", sa.JSON())),
    "automations": (
        ("agent_uid", sa.String(length=64)),
        ("agent_config", sa.JSON()),
        ("definition", sa.JSON()),
    ),
    "scorers": (
        ("definition_name", sa.String(length=200)),
        ("description", sa.Text()),
        ("model_id", sa.String(length=200)),
        ("labels", sa.JSON()),
        ("passing_score", sa.Float()),
        ("sampling_rate", sa.Float()),
        ("output", sa.String(length=32)),
    ),
    "benchmark_suites": (
        ("definition_name", sa.String(length=200)),
        ("agent_uid", sa.String(length=64)),
    ),
    "benchmark_tasks": (("slug", sa.String(length=200)), ("position", sa.Integer())),
}


def upgrade() -> None:
    for table, columns in ADDED.items():
        for name, kind in columns:
            op.add_column(table, sa.Column(name, kind, nullable=True))
    op.create_table(
        "factory_runners",
        sa.Column("uid", sa.String(length=64), primary_key=True),
        sa.Column(
            "factory_uid", sa.String(length=64), sa.ForeignKey("factories.uid"), nullable=False
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("setup_commands", sa.JSON(), nullable=False),
        sa.Column("instance_shape", sa.JSON(), nullable=True),
        sa.Column("platform", sa.JSON(), nullable=False),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.Column("updated_at", MOMENT, nullable=False),
        sa.UniqueConstraint("factory_uid", "name", name="ux_factory_runners_name"),
    )
    op.create_index("ix_factory_runners_factory_uid", "factory_runners", ["factory_uid"])
    op.create_table(
        "factory_skills",
        sa.Column("uid", sa.String(length=64), primary_key=True),
        sa.Column(
            "factory_uid", sa.String(length=64), sa.ForeignKey("factories.uid"), nullable=False
        ),
        sa.Column("agent_uid", sa.String(length=64), nullable=True),
        sa.Column("name", sa.String(length=1000), nullable=False),
        sa.Column("title", sa.String(length=1000), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("frontmatter", sa.JSON(), nullable=True),
        sa.Column("playbook", sa.Text(), nullable=False),
        sa.Column("created_at", MOMENT, nullable=False),
        sa.Column("updated_at", MOMENT, nullable=False),
    )
    op.create_index("ix_factory_skills_factory_uid", "factory_skills", ["factory_uid"])
    _rewrite_triggers(_canonical)


def downgrade() -> None:
    _rewrite_triggers(_old_shape)
    op.drop_index("ix_factory_skills_factory_uid", table_name="factory_skills")
    op.drop_table("factory_skills")
    op.drop_index("ix_factory_runners_factory_uid", table_name="factory_runners")
    op.drop_table("factory_runners")
    for table, columns in ADDED.items():
        for name, _kind in reversed(columns):
            op.drop_column(table, name)


def _rewrite_triggers(convert: Callable[[list[Any]], list[Any]]) -> None:
    bind = op.get_bind()
    automations = sa.table("automations", sa.column("uid"), sa.column("triggers", sa.JSON()))
    for uid, triggers in bind.execute(sa.select(automations.c.uid, automations.c.triggers)):
        stored = json.loads(triggers) if isinstance(triggers, str) else triggers
        converted = convert(stored)
        if converted != stored:
            bind.execute(
                automations.update().where(automations.c.uid == uid).values(triggers=converted)
            )


def _is_webhook(trigger: Any) -> bool:
    return (
        isinstance(trigger, dict)
        and trigger.get("provider") == "webhook"
        and trigger.get("event") == "received"
    )


def _canonical(triggers: list[Any]) -> list[Any]:
    """The old webhook shape ({webhook_ids: [uid], payload?} under filter) in the canonical one;
    a trigger already canonical is kept."""
    out = []
    for trigger in triggers:
        ids = (trigger.get("filter") or {}).get("webhook_ids") if _is_webhook(trigger) else None
        if not isinstance(ids, list):
            out.append(trigger)
            continue
        canonical: dict[str, Any] = {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": {"in": sorted(set(ids))}},
        }
        payload = trigger["filter"].get("payload")
        if payload:
            canonical["payload"] = payload
        out.append(canonical)
    return out


def _old_shape(triggers: list[Any]) -> list[Any]:
    """Canonical webhook triggers in the old shape, one trigger per webhook."""
    out = []
    for trigger in triggers:
        ids = (trigger.get("filter") or {}).get("webhook_ids") if _is_webhook(trigger) else None
        if not isinstance(ids, dict):
            out.append(trigger)
            continue
        for uid in ids.get("in", []):
            old: dict[str, Any] = {"webhook_ids": [uid]}
            if trigger.get("payload"):
                old["payload"] = trigger["payload"]
            out.append({"provider": "webhook", "event": "received", "filter": old})
    return out
