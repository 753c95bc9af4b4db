"""What the store holds of a factory's definition: every resource a definition file declared
(rows marked by their definition name, or tables only files write), with its uid, row and
comparable form. Resources the API created and no file declared are not read: apply leaves them
alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format.model import ResourceKey
from gateway.foundation.store import tables as t
from gateway.platform.factory_files import forms


@dataclass(frozen=True)
class Stored:
    uid: str
    form: forms.Form
    row: Row[Any]


@dataclass
class StoredState:
    """`factory` None: the factory does not exist yet. `agents`: name -> uid of the agents
    files declared."""

    factory: Row[Any] | None
    resources: dict[ResourceKey, Stored] = field(default_factory=dict)
    agents: dict[str, str] = field(default_factory=dict)

    @property
    def factory_uid(self) -> str | None:
        return None if self.factory is None else str(self.factory.uid)


async def load_state(conn: AsyncConnection, factory: Row[Any] | None) -> StoredState:
    state = StoredState(factory)
    if factory is None:
        return state
    uid = factory.uid
    state.resources[("factory", "")] = Stored(uid, forms.factory_form(factory), factory)
    agent_rows = await _rows(conn, t.agents, uid, t.agents.c.definition_name.is_not(None))
    names = {row.uid: row.definition_name for row in agent_rows}
    state.agents = {name: agent_uid for agent_uid, name in names.items()}
    for row in agent_rows:
        _keep(state, ("agent", row.definition_name), row, forms.agent_form(row))
    for row in await _rows(conn, t.factory_runners, uid):
        _keep(state, ("runner", row.name), row, forms.runner_form(row))
    for row in await _rows(conn, t.factory_skills, uid):
        owner = None if row.agent_uid is None else names.get(row.agent_uid, row.agent_uid)
        key = ("skill", row.name) if owner is None else ("agent_skill", f"{owner}/{row.name}")
        _keep(state, key, row, forms.skill_form(row, names))
    w = t.webhooks
    live = (w.c.definition_name.is_not(None), w.c.deleted_at.is_(None))
    for row in await _rows(conn, w, uid, *live):
        _keep(state, ("webhook", row.definition_name), row, forms.webhook_form(row))
    a = t.automations
    for row in await _rows(conn, a, uid, a.c.definition_name.is_not(None)):
        _keep(state, ("automation", row.definition_name), row, forms.automation_form(row, names))
    sc = t.scorers
    for row in await _rows(conn, sc, uid, sc.c.definition_name.is_not(None)):
        _keep(state, ("scorer", row.definition_name), row, forms.scorer_form(row, names))
    await _suites(conn, state, uid, names)
    return state


async def _suites(
    conn: AsyncConnection, state: StoredState, factory_uid: str, names: dict[str, str]
) -> None:
    s, k = t.benchmark_suites, t.benchmark_tasks
    rows = await _rows(
        conn, s, factory_uid, s.c.definition_name.is_not(None), s.c.deleted_at.is_(None)
    )
    if not rows:
        return
    tasks: dict[str, list[Row[Any]]] = {}
    query = (
        select(k)
        .where(k.c.suite_uid.in_([row.uid for row in rows]), k.c.slug.is_not(None))
        .order_by(k.c.suite_uid, k.c.position, k.c.uid)
    )
    for task in await conn.execute(query):
        tasks.setdefault(task.suite_uid, []).append(task)
    for row in rows:
        form = forms.suite_form(row, tasks.get(row.uid, []), names)
        _keep(state, ("benchmark_suite", row.definition_name), row, form)


def _keep(state: StoredState, key: ResourceKey, row: Row[Any], form: forms.Form) -> None:
    state.resources[key] = Stored(str(row.uid), form, row)


async def _rows(conn: AsyncConnection, table: Any, factory_uid: str, *where: Any) -> list[Row[Any]]:
    query = select(table).where(table.c.factory_uid == factory_uid, *where).order_by(table.c.uid)
    return list((await conn.execute(query)).all())


async def task_rows(conn: AsyncConnection, suite_uid: str) -> list[Row[Any]]:
    """Every task of a suite, files' and the API's."""
    k = t.benchmark_tasks
    return list((await conn.execute(select(k).where(k.c.suite_uid == suite_uid))).all())
