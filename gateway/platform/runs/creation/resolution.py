"""A new run's configuration, resolved once when it is made and stored with it (runs.agent_config;
docs/runs-and-tasks.md#what-a-run-carries): later changes to its agent or its factory's files do
not change a run already made.

A run an agent executes starts from that agent's configuration: for an agent a factory's files
declare, the snapshot the last apply resolved (agentDefaults -> agent, factory-format.md §5:
`agents.definition.run_config`, with its runner file and skills); for an agent of the API, its run
defaults. What the request sets (`config`) overrides it key by key. A run an automation starts
carries the automation's snapshot (agentDefaults -> agent -> automation), resolved the same way
when its factory's files were applied; an automation made by the API stores none, and its runs
carry its agent's (else the foreman's) configuration, resolved when each run is made.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec
from msgspec import UNSET, structs
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.runs.record.models import AgentConfig, RunAgent, RunHarness

# the keys a request's config may set over its agent's (the others are the service's)
_REQUEST_KEYS = (
    *("name", "model_id", "base_prompt", "environment_id", "worker_host", "skill_spec"),
    *("mcp_servers", "credential_strategy"),
)


async def resolve_config(
    conn: AsyncConnection, agent_uid: str | None, requested: AgentConfig | None
) -> AgentConfig | None:
    """The configuration a run of `agent_uid` (None: nobody's) carries, `requested` over it."""
    if agent_uid is None:
        return requested
    a = t.agents
    query = select(a.c.uid, a.c.name, a.c.agent_type, a.c.run_defaults, a.c.definition)
    row = (await conn.execute(query.where(a.c.uid == agent_uid))).first()
    if row is None:
        return requested
    return over(agent_config(row), requested)


async def agents_configs(
    conn: AsyncConnection, agent_uids: Collection[str]
) -> dict[str, AgentConfig]:
    """The own configuration of each agent of `agent_uids` that exists (one query): what the
    runs of an automation that stores none carry (an automation made by the API, whose runs go
    to its agent or the factory's foreman)."""
    if not agent_uids:
        return {}
    a = t.agents
    query = select(a.c.uid, a.c.name, a.c.agent_type, a.c.run_defaults, a.c.definition)
    rows = await conn.execute(query.where(a.c.uid.in_(sorted(agent_uids))))
    return {row.uid: agent_config(row) for row in rows}


def agent_config(row: Any) -> AgentConfig:
    """An agent's own configuration: its file snapshot, else its run defaults."""
    snapshot = (row.definition or {}).get("run_config")
    if snapshot is not None:
        return msgspec.convert(snapshot, AgentConfig)
    defaults: dict[str, Any] = row.run_defaults or {}
    model = defaults.get("base_model")
    return AgentConfig(
        agent=RunAgent(uid=row.uid, name=row.name, type=row.agent_type or UNSET),
        agent_uid=row.uid,
        base_prompt=defaults.get("prompt") or UNSET,
        model_id=model or UNSET,
        harness=RunHarness(type="oz", model=model, model_id=model) if model else UNSET,
        environment_id=defaults.get("environment_id") or UNSET,
        worker_host=defaults.get("worker_host") or UNSET,
        credential_strategy=defaults.get("credential_strategy") or UNSET,
        mcp_servers=defaults.get("mcp_servers") or UNSET,
        skills=list(defaults.get("skills") or []) or UNSET,
        secrets=list(defaults.get("secrets") or []) or UNSET,
    )


def over(base: AgentConfig, requested: AgentConfig | None) -> AgentConfig:
    """`base` with what `requested` sets; a model the request names is the harness's when the
    harness is oz (a Warp model id), and replaces a harness of another type."""
    if requested is None:
        return base
    changes = {
        key: getattr(requested, key)
        for key in _REQUEST_KEYS
        if getattr(requested, key) not in (UNSET, None)
    }
    model = changes.get("model_id")
    if isinstance(model, str):
        changes["harness"] = RunHarness(type="oz", model=model, model_id=model)
    return structs.replace(base, **changes)
