"""Comparable forms (factory_format.comparable) of what the store holds for a factory's
definition, made by rebuilding each resource of the tree's model from its row: the plan diffs
them with the tree's own forms, so a stored resource and the file it was applied from compare
equal field by field. Columns the API can change (names, prompts, enabled, triggers, webhook
settings) are read from the columns, so a change made through the API shows in the next plan.

`JsonForm` values are what JSON columns hold: `json_form` of factory_format's Structs."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Row

from factory_format import (
    Agent,
    Automation,
    BenchmarkSuite,
    Factory,
    FactoryTree,
    Runner,
    Scorer,
    Skill,
    Webhook,
    comparable,
)
from factory_format.model import Resource, ResourceKey
from gateway.kernel.types import JsonObject
from gateway.webhook_gateway.automations.models import FileLayers, stored_triggers

Form = JsonObject  # a comparable form: plain JSON data
AgentNames = dict[str, str]  # agent uid -> its name in the tree


def tree_forms(tree: FactoryTree) -> dict[ResourceKey, Form]:
    """The tree's resources in comparable form, as the store holds them (a webhook's delivery
    id header lower-cased)."""
    return {key: _form(resource) for key, resource in tree.resources().items()}


def _form(resource: Resource) -> Form:
    if isinstance(resource, Webhook) and resource.delivery_id_header is not None:
        resource = msgspec.structs.replace(
            resource, delivery_id_header=resource.delivery_id_header.lower()
        )
    form: Form = comparable(resource)
    return form


def factory_form(row: Row[Any]) -> Form:
    """A factory never applied from files has only its name and alias."""
    if row.schema_version is None:
        return {"name": row.name, "alias": row.alias}
    stored = {
        "schema_version": row.schema_version,
        "name": row.name,
        "description": row.description,
        "alias": row.alias,
        "credential_strategy": row.credential_strategy,
        "repositories": row.repositories or [],
        "secrets": row.secrets or [],
        "mcp_servers": row.mcp_servers or {},
        "cloud_providers": row.cloud_providers,
        "integrations": row.integrations,
        "agent_defaults": row.agent_defaults or {},
        "code_forges": row.code_forges,
    }
    return _rebuilt(stored, Factory)


def agent_form(row: Row[Any]) -> Form:
    # `run_config` is what its runs carry (run_configs.py), made from the tree, not part of it
    definition = {k: v for k, v in (row.definition or {}).items() if k != "run_config"}
    stored = {
        **definition,
        "name": row.name,
        "path": "",
        "description": row.description,
        "agent_type": row.agent_type or "CUSTOM",
        "prompt": (row.run_defaults or {}).get("prompt") or "",
    }
    return _rebuilt(stored, Agent)


def automation_form(row: Row[Any], agents: AgentNames) -> Form:
    layers = FileLayers.stored(row.definition)
    stored = {
        "name": row.name,
        "path": "",
        "enabled": row.enabled,
        "agent": agents.get(row.agent_uid or "", row.agent_uid or ""),
        "triggers": [msgspec.to_builtins(t) for t in stored_triggers(row.triggers)],
        "prompt": row.prompt,
        **({} if layers is None else msgspec.to_builtins(layers)),
    }
    return _rebuilt(stored, Automation)


def runner_form(row: Row[Any]) -> Form:
    stored = {
        "name": row.name,
        "path": "",
        "description": row.description,
        "setup_commands": row.setup_commands or [],
        "instance_shape": row.instance_shape,
        "platform": row.platform,
    }
    return _rebuilt(stored, Runner)


def scorer_form(row: Row[Any], agents: AgentNames) -> Form:
    stored = {
        "name": row.name,
        "path": "",
        "description": row.description,
        "agents": [agents.get(uid, uid) for uid in row.agent_uids or []],
        "enabled": row.active,
        "output": row.output or "classification",
        "labels": row.labels or [],
        "passing_score": row.passing_score if row.passing_score is not None else 0.0,
        "sampling_rate": row.sampling_rate if row.sampling_rate is not None else 25.0,
        "model": row.model_id or "",
        "self_improvement": row.self_improvement_enabled,
        "rubric": row.prompt,
    }
    return _rebuilt(stored, Scorer)


def skill_form(row: Row[Any], agents: AgentNames) -> Form:
    stored = {
        "name": row.name,
        "path": "",
        "agent": None if row.agent_uid is None else agents.get(row.agent_uid, row.agent_uid),
        "title": row.title,
        "description": row.description,
        "frontmatter": row.frontmatter or {},
        "playbook": row.playbook,
    }
    if row.files:  # none stored: the tree's skill without other files (UNSET) compares equal
        stored["files"] = row.files
    return _rebuilt(stored, Skill)


def webhook_form(row: Row[Any]) -> Form:
    stored = {
        "name": row.name,
        "path": "",
        "auth_mode": row.auth_mode,
        "signature_scheme": row.signature_scheme,
        "secret_name": row.secret_name or "",
        "delivery_id_header": row.delivery_id_header,
        "enabled": row.enabled,
    }
    return _rebuilt(stored, Webhook)


def suite_form(row: Row[Any], tasks: list[Row[Any]], agents: AgentNames) -> Form:
    """`tasks`: the suite's task rows that files declared, in their order."""
    stored = {
        "slug": row.definition_name,
        "path": "",
        "name": row.name,
        "description": row.description,
        "agent": agents.get(row.agent_uid or "", row.agent_uid or ""),
        "tasks": [
            {
                "slug": task.slug,
                "path": "",
                "title": task.title,
                "prompt": task.prompt,
                "success_criteria": task.success_criteria,
                "source_run_id": task.source_run_id,
                "starting_repo_refs": task.starting_repo_refs or [],
            }
            for task in tasks
        ],
    }
    return _rebuilt(stored, BenchmarkSuite)


def _rebuilt(stored: JsonObject, kind: type[Resource]) -> Form:
    """The stored values made into the tree's model, then into its comparable form: both
    sides of a plan go through the same Struct, so defaults and list forms agree."""
    form: Form = comparable(msgspec.convert(stored, kind))
    return form
