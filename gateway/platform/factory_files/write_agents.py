"""The tree's agents and skills, written. An agent of a tree is an agent of the factory's team
(agents.factory_uid, agents.definition_name), without an API key: runners of the team execute
its runs. Its run defaults (what /agent/identities shows and its runs start from) are its
resolved configuration."""

from __future__ import annotations

from msgspec import Struct, UnsetType
from sqlalchemy import delete

from factory_format import Agent, EffectiveConfig, RunConfig, Skill
from gateway.foundation.store import tables as t
from gateway.kernel import ids
from gateway.kernel.types import JsonObject
from gateway.platform.agents.models import RunDefaults
from gateway.platform.factory_files.writing import Columns, Writing
from gateway.webhook_gateway.automations.models import json_form


def run_defaults(agent: Agent) -> RunDefaults:
    """agents.run_defaults of a file agent: its prompt and resolved configuration. The model is
    its harness's for oz (a Warp model id); a credential strategy it does not set is the
    factory's, read where runs start."""
    effective = agent.effective
    return RunDefaults(
        prompt=agent.prompt or None,
        base_model=effective.harness.model if effective.harness.type == "oz" else None,
        environment_id=effective.environment_id,
        worker_host=effective.worker_host,
        credential_strategy=effective.credential_strategy,
        mcp_servers=mcp_configs(effective.mcp_servers),
        secrets=list(effective.secrets),
    )


def mcp_configs(servers: dict[str, str]) -> dict[str, JsonObject] | None:
    """{name: warpId} as run configurations hold MCP servers: {name: {"warp_id": id}}."""
    return {name: {"warp_id": warp_id} for name, warp_id in servers.items()} or None


class AgentDefinition(Struct, kw_only=True):
    """agents.definition: what an agent's file says beyond the agents table's columns."""

    credential_strategy: str | None
    config: RunConfig
    skills: tuple[str, ...]
    effective: EffectiveConfig


class AgentColumns(Columns, kw_only=True):
    name: str
    description: str | None
    agent_type: str
    run_defaults: JsonObject | None
    definition_name: str
    definition: JsonObject


def _columns(agent: Agent) -> AgentColumns:
    definition = AgentDefinition(
        credential_strategy=agent.credential_strategy,
        config=agent.config,
        skills=agent.skills,
        effective=agent.effective,
    )
    return AgentColumns(
        name=agent.name,
        description=agent.description,
        agent_type=agent.agent_type,
        run_defaults=run_defaults(agent).to_stored(),
        definition_name=agent.name,
        definition=json_form(definition),
    )


async def create_agent(w: Writing, agent: Agent) -> None:
    uid = ids.new_id("agent")
    columns = _columns(agent)
    await w.insert_row(t.agents, uid, columns, team_uid=w.team_uid, factory_uid=w.factory_uid)
    w.agents[agent.name] = uid


async def update_agent(w: Writing, uid: str, agent: Agent) -> None:
    await w.update_row(t.agents, uid, _columns(agent))


async def delete_agent(w: Writing, uid: str) -> None:
    """The agent and any API key made for it (its runs keep its uid)."""
    await w.conn.execute(
        delete(t.api_keys).where(t.api_keys.c.kind == "agent", t.api_keys.c.principal_uid == uid)
    )
    await w.conn.execute(delete(t.factory_skills).where(t.factory_skills.c.agent_uid == uid))
    await w.conn.execute(delete(t.agents).where(t.agents.c.uid == uid))


class SkillColumns(Columns, kw_only=True):
    agent_uid: str | None
    name: str
    title: str
    description: str | None
    frontmatter: JsonObject | None
    playbook: str
    files: dict[str, str] | None


def _skill_columns(w: Writing, skill: Skill) -> SkillColumns:
    return SkillColumns(
        agent_uid=None if skill.agent is None else w.agent_uid(skill.agent),
        name=skill.name,
        title=skill.title,
        description=skill.description,
        frontmatter=json_form(skill.frontmatter) or None,
        playbook=skill.playbook,
        files=None if isinstance(skill.files, UnsetType) else dict(skill.files) or None,
    )


async def create_skill(w: Writing, skill: Skill) -> None:
    columns = _skill_columns(w, skill)
    await w.insert_row(t.factory_skills, ids.new_id("skill"), columns, factory_uid=w.factory_uid)


async def update_skill(w: Writing, uid: str, skill: Skill) -> None:
    await w.update_row(t.factory_skills, uid, _skill_columns(w, skill))


async def delete_skill(w: Writing, uid: str) -> None:
    await w.conn.execute(delete(t.factory_skills).where(t.factory_skills.c.uid == uid))
