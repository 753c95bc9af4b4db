"""The tree's agents and skills, written. An agent of a tree is an agent of the factory's team
(agents.factory_uid, agents.definition_name), without an API key: runners of the team execute
its runs. Its run defaults (what /agent/identities shows and its runs start from) are its
resolved configuration."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, update

from factory_format import Agent, Skill
from gateway import ids
from gateway.automations.models import json_form
from gateway.platform.factory_files.writing import Writing
from gateway.store import tables as t


def run_defaults(agent: Agent) -> dict[str, Any] | None:
    """agents.run_defaults of a file agent: its prompt and resolved configuration. The model is
    its harness's for oz (a Warp model id); a credential strategy it does not set is the
    factory's, read where runs start."""
    effective = agent.effective
    defaults: dict[str, Any] = {
        "prompt": agent.prompt or None,
        "base_model": effective.harness.model if effective.harness.type == "oz" else None,
        "environment_id": effective.environment_id,
        "worker_host": effective.worker_host,
        "credential_strategy": effective.credential_strategy,
        "mcp_servers": mcp_configs(effective.mcp_servers),
        "secrets": list(effective.secrets) or None,
    }
    kept = {key: value for key, value in defaults.items() if value is not None}
    return kept or None


def mcp_configs(servers: dict[str, str]) -> dict[str, Any] | None:
    """{name: warpId} as run configurations hold MCP servers: {name: {"warp_id": id}}."""
    return {name: {"warp_id": warp_id} for name, warp_id in servers.items()} or None


def _definition(agent: Agent) -> Any:
    return json_form(
        {
            "credential_strategy": agent.credential_strategy,
            "config": agent.config,
            "skills": agent.skills,
            "effective": agent.effective,
        }
    )


def _columns(agent: Agent) -> dict[str, Any]:
    return {
        "name": agent.name,
        "description": agent.description,
        "agent_type": agent.agent_type,
        "run_defaults": run_defaults(agent),
        "definition_name": agent.name,
        "definition": _definition(agent),
    }


async def create_agent(w: Writing, agent: Agent) -> None:
    uid, at = ids.new_id("agent"), w.moment()
    await w.conn.execute(
        insert(t.agents).values(
            uid=uid,
            team_uid=w.team_uid,
            factory_uid=w.factory_uid,
            created_at=at,
            updated_at=at,
            **_columns(agent),
        )
    )
    w.agents[agent.name] = uid


async def update_agent(w: Writing, uid: str, agent: Agent) -> None:
    await w.conn.execute(
        update(t.agents).where(t.agents.c.uid == uid).values(updated_at=w.now, **_columns(agent))
    )


async def delete_agent(w: Writing, uid: str) -> None:
    """The agent and any API key made for it (its runs keep its uid)."""
    await w.conn.execute(
        delete(t.api_keys).where(t.api_keys.c.kind == "agent", t.api_keys.c.principal_uid == uid)
    )
    await w.conn.execute(delete(t.factory_skills).where(t.factory_skills.c.agent_uid == uid))
    await w.conn.execute(delete(t.agents).where(t.agents.c.uid == uid))


def _skill_columns(w: Writing, skill: Skill) -> dict[str, Any]:
    return {
        "agent_uid": None if skill.agent is None else w.agent_uid(skill.agent),
        "name": skill.name,
        "title": skill.title,
        "description": skill.description,
        "frontmatter": json_form(skill.frontmatter) or None,
        "playbook": skill.playbook,
    }


async def create_skill(w: Writing, skill: Skill) -> None:
    at = w.moment()
    await w.conn.execute(
        insert(t.factory_skills).values(
            uid=ids.new_id("skill"),
            factory_uid=w.factory_uid,
            created_at=at,
            updated_at=at,
            **_skill_columns(w, skill),
        )
    )


async def update_skill(w: Writing, uid: str, skill: Skill) -> None:
    s = t.factory_skills
    await w.conn.execute(
        update(s).where(s.c.uid == uid).values(updated_at=w.now, **_skill_columns(w, skill))
    )


async def delete_skill(w: Writing, uid: str) -> None:
    await w.conn.execute(delete(t.factory_skills).where(t.factory_skills.c.uid == uid))
