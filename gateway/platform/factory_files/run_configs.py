"""What the runs of a tree's agents and automations carry (runs.agent_config), resolved at apply
from the whole tree: the agent (uid, name, type) and its prompt, the effective configuration
(agentDefaults -> agent -> automation, factory-format.md §5: model or harness, runner,
environment, secrets, MCP servers, worker host, credential strategy), the runner file's setup,
image and shape, and the skills the agent may use with their text. Stored on the agent
(`agents.definition.run_config`: runs the agent executes, runs/creation/resolution.py) and on
the automation (`automations.agent_config`: the runs it starts), and refreshed after every apply
that changes anything, so a run made later carries the tree as it is then, and a run made
before keeps its copy."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET
from sqlalchemy import select, update

from factory_format import Agent, EffectiveConfig, FactoryTree, Skill
from gateway.foundation.store import tables as t
from gateway.platform.factory_files.write_agents import mcp_configs
from gateway.platform.factory_files.writing import Writing
from gateway.platform.runs.record.models import (
    AgentConfig,
    InstanceShape,
    RunAgent,
    RunHarness,
    RunHarnessAuth,
    RunnerConfig,
    RunRepository,
    SkillDocument,
    SkillFile,
)
from gateway.webhook_gateway.automations.models import json_form

DEFAULT_STRATEGY = "EXECUTOR"  # factory-format.md §3.1: a factory that sets none


def run_config(
    tree: FactoryTree,
    agent: Agent,
    agent_uid: str,
    effective: EffectiveConfig,
    factory_strategy: str | None,
) -> AgentConfig:
    """The configuration of a run `agent` executes with `effective` (its own, or an automation's
    resolved over it)."""
    harness = effective.harness
    runner = _runner(tree, effective.runner)
    skills = [skill for skill in tree.skills if skill.agent in (None, agent.name)]
    skills.sort(key=lambda skill: (skill.agent is not None, skill.name))
    strategy = effective.credential_strategy or factory_strategy or DEFAULT_STRATEGY
    return AgentConfig(
        agent=RunAgent(uid=agent_uid, name=agent.name, type=agent.agent_type),
        agent_uid=agent_uid,
        base_prompt=agent.prompt or UNSET,
        model_id=harness.model if harness.type == "oz" else UNSET,
        harness=RunHarness(
            type=harness.type,
            model=harness.model,
            model_id=harness.model,
            reasoning_level=harness.reasoning_level or UNSET,
            auth=UNSET
            if harness.auth is None
            else RunHarnessAuth(
                source=harness.auth.source, secret_name=harness.auth.secret_name or UNSET
            ),
        ),
        runner=effective.runner or UNSET,
        runner_config=runner or UNSET,
        environment_id=effective.environment_id or UNSET,
        worker_host=effective.worker_host or UNSET,
        mcp_servers=mcp_configs(effective.mcp_servers) or UNSET,
        secrets=list(effective.secrets) or UNSET,
        credential_strategy="CREATOR" if strategy == "CREATOR" else "EXECUTOR",
        skills=[skill.name for skill in skills] or UNSET,
        repositories=_repositories(tree) or UNSET,
        skill_documents=[_document(skill) for skill in skills] or UNSET,
    )


def _repositories(tree: FactoryTree) -> list[RunRepository]:
    """The factory's repositories, on GitLab for a factory whose only code forge is GitLab."""
    forges = tree.factory.code_forges or ()
    provider: Literal["github", "gitlab"] = "gitlab" if forges == ("GITLAB",) else "github"
    return [
        RunRepository(provider=provider, owner=repository.owner, name=repository.name)
        for repository in tree.factory.repositories
    ]


def _runner(tree: FactoryTree, name: str | None) -> RunnerConfig | None:
    if name is None:
        return None
    for runner in tree.runners:
        if runner.name == name:
            shape = runner.instance_shape
            return RunnerConfig(
                name=name,
                setup_commands=list(runner.setup_commands),
                docker_image=runner.platform.docker_image or UNSET,
                instance_shape=UNSET
                if shape is None
                else InstanceShape(vcpus=shape.vcpus, memory_gb=shape.memory_gb),
            )
    return RunnerConfig(name=name)  # a runner of the team the tree does not declare


def _document(skill: Skill) -> SkillDocument:
    """The skill and its SKILL.md as the tree gives it (frontmatter keys, then the playbook)."""
    front: dict[str, Any] = {"name": skill.title}
    if skill.description:
        front["description"] = skill.description
    front.update(skill.frontmatter)
    # JSON values are YAML flow values: the frontmatter reads back as it was written
    lines = "".join(f"{key}: {msgspec.json.encode(v).decode()}\n" for key, v in front.items())
    return SkillDocument(
        name=skill.name,
        scope="factory" if skill.agent is None else "agent",
        path=skill.path,
        description=skill.description or UNSET,
        content=f"---\n{lines}---\n{skill.playbook}",
        files=[SkillFile(path=path, content=text) for path, text in (skill.files or {}).items()]
        or UNSET,
    )


async def factory_strategy(w: Writing) -> str | None:
    """The factory's stored credential strategy (a tree that sets none leaves it)."""
    f = t.factories
    query = select(f.c.credential_strategy).where(f.c.uid == w.factory_uid)
    value: str | None = (await w.conn.execute(query)).scalar()
    return value


async def refresh(w: Writing, tree: FactoryTree) -> None:
    """Every agent's and automation's stored run configuration made from the tree as applied,
    after the writes: an agent's prompt, a skill or a runner file may change what an unchanged
    automation's runs carry. An automation whose configuration changes is stamped, so the
    evaluator's index reloads it."""
    strategy = w.credential_strategy
    agents = {agent.name: agent for agent in tree.agents}
    a, auto = t.agents, t.automations
    for agent in tree.agents:
        uid = w.agent_uid(agent.name)
        stored = (await w.conn.execute(select(a.c.definition).where(a.c.uid == uid))).scalar()
        config = json_form(run_config(tree, agent, uid, agent.effective, strategy))
        if stored is not None and stored.get("run_config") != config:
            await w.conn.execute(
                update(a).where(a.c.uid == uid).values(definition={**stored, "run_config": config})
            )
    found = select(auto.c.uid, auto.c.definition_name, auto.c.agent_config).where(
        auto.c.factory_uid == w.factory_uid, auto.c.definition_name.is_not(None)
    )
    by_name = {automation.name: automation for automation in tree.automations}
    for row in (await w.conn.execute(found)).all():
        automation = by_name.get(row.definition_name)
        if automation is None:
            continue
        agent = agents[automation.agent]
        uid = w.agent_uid(agent.name)
        config = json_form(run_config(tree, agent, uid, automation.effective, strategy))
        if row.agent_config != config:
            await w.conn.execute(
                update(auto)
                .where(auto.c.uid == row.uid)
                .values(agent_config=config, updated_at=w.now)
            )
