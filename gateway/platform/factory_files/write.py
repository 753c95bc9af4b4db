"""A plan carried out, in the caller's transaction: creates and updates in dependency order
(the factory, runners, agents and the foreman, then what refers to agents and webhooks), then
deletes in the reverse order, so nothing refers to what is gone."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import FactoryTree
from factory_format.model import Resource
from gateway.foundation.services import Services
from gateway.platform.factory_files import run_configs
from gateway.platform.factory_files import write_agents as agents
from gateway.platform.factory_files import write_extras as extras
from gateway.platform.factory_files import write_triggers as triggers
from gateway.platform.factory_files.models import Change
from gateway.platform.factory_files.plan import tree_foreman
from gateway.platform.factory_files.state import StoredState
from gateway.platform.factory_files.write_factory import (
    create_factory,
    make_foreman,
    update_factory,
)
from gateway.platform.factory_files.writing import Writing

Create = Callable[[Writing, Any], Awaitable[None]]
Update = Callable[[Writing, str, Any], Awaitable[None]]
Delete = Callable[[Writing, str], Awaitable[None]]


async def _create_webhook(w: Writing, hook: Any) -> None:
    await triggers.write_webhook(w, None, hook)


async def _update_webhook(w: Writing, uid: str, hook: Any) -> None:
    await triggers.write_webhook(w, uid, hook)


WRITERS: dict[str, tuple[Create, Update, Delete]] = {
    "runner": (extras.create_runner, extras.update_runner, extras.delete_runner),
    "agent": (agents.create_agent, agents.update_agent, agents.delete_agent),
    "skill": (agents.create_skill, agents.update_skill, agents.delete_skill),
    "agent_skill": (agents.create_skill, agents.update_skill, agents.delete_skill),
    "webhook": (_create_webhook, _update_webhook, triggers.delete_webhook),
    "automation": (
        triggers.create_automation,
        triggers.update_automation,
        triggers.delete_automation,
    ),
    "scorer": (extras.create_scorer, extras.update_scorer, extras.delete_scorer),
    "benchmark_suite": (extras.create_suite, extras.update_suite, extras.delete_suite),
}
FIRST = ("runner", "agent")  # what the others refer to
THEN = ("skill", "agent_skill", "webhook", "automation", "scorer", "benchmark_suite")


async def write_changes(
    conn: AsyncConnection,
    services: Services,
    *,
    team_uid: str,
    creator_uid: str | None,
    tree: FactoryTree,
    state: StoredState,
    changes: list[Change],
    secret_values: dict[str, str],
) -> str:
    """The factory's uid (created when the plan says so)."""
    w = Writing(conn, services, team_uid, state.factory_uid or "", creator_uid)
    w.agents = dict(state.agents)
    w.secret_values = secret_values
    if state.factory_uid is None:
        w.factory_uid = await create_factory(conn, team_uid, tree.factory, w.now)
    else:  # rewritten whatever changed: definition_applied_at says when a tree last applied
        await update_factory(conn, state.factory_uid, tree.factory, w.now)
    w.tree = tree
    w.credential_strategy = await run_configs.factory_strategy(w)
    wanted = tree.resources()
    by_kind: dict[str, list[Change]] = {}
    for change in changes:
        by_kind.setdefault(change.kind, []).append(change)
    for kind in FIRST:
        await _upsert(w, kind, by_kind.get(kind, []), wanted, state)
    foreman = w.agents[tree_foreman(tree)]
    if state.factory is None or state.factory.foreman_agent_uid != foreman:
        await make_foreman(conn, w.factory_uid, foreman)
    for kind in THEN:
        await _upsert(w, kind, by_kind.get(kind, []), wanted, state)
    for kind in reversed((*FIRST, *THEN)):
        delete = WRITERS[kind][2]
        for change in by_kind.get(kind, []):
            if change.action == "delete":
                await delete(w, state.resources[(kind, change.name)].uid)
    await run_configs.refresh(w, tree)
    return w.factory_uid


async def _upsert(
    w: Writing,
    kind: str,
    changes: list[Change],
    wanted: dict[tuple[str, str], Resource],
    state: StoredState,
) -> None:
    create, update, _delete = WRITERS[kind]
    for change in changes:
        key = (kind, change.name)
        if change.action == "create":
            await create(w, wanted[key])
        elif change.action == "update":
            await update(w, state.resources[key].uid, wanted[key])
