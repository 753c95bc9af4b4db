"""Benchmark suites of a factory and their tasks (spec 4.9; docs/api.md, "Benchmark suites").

A suite holds tasks (title, prompt, success criteria) and configurations, what each trial runs
with: a name, an optional model, how many attempts. Reading needs access to the factory;
changing, manage access. A deleted suite is kept (its runs still read) but no longer listed,
read or launched.

Tasks: adding a task identical to one the suite has (same title, prompt, success criteria,
source run, repository refs and tags) answers that task; a title already used for different
content is a 409. An edit keeps omitted fields; `title`, `prompt` and `success_criteria` may not
be null or blank; an explicit null `source_run_id`, or an empty `starting_repo_refs` or `tags`,
clears the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.factories import Factory, require_manage_access
from gateway.accounts.identities import Principal
from gateway.catalog import ModelSpec
from gateway.errors import Conflict, InvalidRequest, NotFound
from gateway.platform.catalog.llm_models import check_model
from gateway.platform.runs.records import can_view, find_run
from gateway.store import tables as t
from gateway.store.types import utcnow

s, k = t.benchmark_suites, t.benchmark_tasks
TASK_FIELDS = ("title", "prompt", "success_criteria", "source_run_id", "starting_repo_refs", "tags")


class TaskTitleTaken(Conflict):
    code, title = "task_title_taken", "A task of this suite has that title"


async def create_suite(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    fields: dict[str, Any],
    models: Sequence[ModelSpec],
) -> Row[Any]:
    require_manage_access(principal, factory)
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(s).values(
            uid=uid,
            factory_uid=factory.uid,
            name=fields["name"],
            description=fields.get("description"),
            configurations=check_configurations(fields["configurations"], models),
            created_by_uid=principal.uid,
            created_at=now,
            updated_at=now,
        )
    )
    return await get_suite(conn, factory, uid)


def check_configurations(
    configurations: list[dict[str, Any]], models: Sequence[ModelSpec]
) -> list[dict[str, Any]]:
    """Distinct names; each model an enabled one of /agent/models."""
    names: set[str] = set()
    for i, configuration in enumerate(configurations):
        if configuration["name"] in names:
            raise InvalidRequest(f"configurations[{i}].name: {configuration['name']!r} twice")
        names.add(configuration["name"])
        if configuration.get("model_id") is not None:
            check_model(models, configuration["model_id"], f"configurations[{i}].model_id")
    return configurations


async def list_suites(conn: AsyncConnection, factory: Factory) -> list[Row[Any]]:
    query = (
        select(s)
        .where(s.c.factory_uid == factory.uid, s.c.deleted_at.is_(None))
        .order_by(s.c.created_at, s.c.uid)
    )
    return list(await conn.execute(query))


async def get_suite(conn: AsyncConnection, factory: Factory, uid: str) -> Row[Any]:
    """A live suite of the factory; 404 otherwise (deleted ones too)."""
    row = (await conn.execute(select(s).where(s.c.uid == uid))).first()
    if row is None or row.factory_uid != factory.uid or row.deleted_at is not None:
        raise NotFound(f"suite_uid: no suite {uid} in this factory")
    return row


async def update_suite(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    uid: str,
    changes: dict[str, Any],
    models: Sequence[ModelSpec],
) -> Row[Any]:
    require_manage_access(principal, factory)
    await get_suite(conn, factory, uid)
    if not changes:
        raise InvalidRequest("body: give at least one of name, description, configurations")
    if "configurations" in changes:
        changes["configurations"] = check_configurations(changes["configurations"], models)
    await conn.execute(update(s).where(s.c.uid == uid).values(**changes, updated_at=utcnow()))
    return await get_suite(conn, factory, uid)


async def delete_suite(
    conn: AsyncConnection, principal: Principal, factory: Factory, uid: str
) -> None:
    require_manage_access(principal, factory)
    await get_suite(conn, factory, uid)
    now = utcnow()
    await conn.execute(update(s).where(s.c.uid == uid).values(deleted_at=now, updated_at=now))


async def suite_tasks(conn: AsyncConnection, suite_uid: str) -> list[Row[Any]]:
    query = select(k).where(k.c.suite_uid == suite_uid).order_by(k.c.created_at, k.c.uid)
    return list(await conn.execute(query))


async def add_task(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    suite_uid: str,
    fields: dict[str, Any],
) -> tuple[Row[Any], bool]:
    """(the task, whether it was created): an identical one is answered as it is."""
    require_manage_access(principal, factory)
    await get_suite(conn, factory, suite_uid)
    values = {name: fields.get(name) for name in TASK_FIELDS}
    values["starting_repo_refs"] = values["starting_repo_refs"] or None
    values["tags"] = values["tags"] or None
    await _check_source_run(conn, principal, values["source_run_id"])
    same_title = (
        await conn.execute(
            select(k).where(k.c.suite_uid == suite_uid, k.c.title == values["title"])
        )
    ).first()
    if same_title is not None:
        if all(getattr(same_title, name) == values[name] for name in TASK_FIELDS):
            return same_title, False
        raise TaskTitleTaken(f"title: the suite has a different task titled {values['title']!r}")
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(k).values(uid=uid, suite_uid=suite_uid, created_at=now, updated_at=now, **values)
    )
    return await get_task(conn, factory, suite_uid, uid), True


async def get_task(conn: AsyncConnection, factory: Factory, suite_uid: str, uid: str) -> Row[Any]:
    await get_suite(conn, factory, suite_uid)
    row = (await conn.execute(select(k).where(k.c.uid == uid))).first()
    if row is None or row.suite_uid != suite_uid:
        raise NotFound(f"task_uid: no task {uid} in this suite")
    return row


async def update_task(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    suite_uid: str,
    uid: str,
    changes: dict[str, Any],
) -> Row[Any]:
    require_manage_access(principal, factory)
    await get_task(conn, factory, suite_uid, uid)
    if not changes:
        raise InvalidRequest(f"body: give at least one of {', '.join(TASK_FIELDS)}")
    for name in ("title", "prompt", "success_criteria"):
        if name in changes and (changes[name] is None or not str(changes[name]).strip()):
            raise InvalidRequest(f"{name}: may not be null or blank")
    for name in ("starting_repo_refs", "tags"):
        if name in changes and not changes[name]:
            changes[name] = None  # explicitly empty: cleared
    if changes.get("source_run_id") is not None:
        await _check_source_run(conn, principal, changes["source_run_id"])
    if "title" in changes:
        taken = select(k.c.uid).where(
            k.c.suite_uid == suite_uid, k.c.title == changes["title"], k.c.uid != uid
        )
        if (await conn.execute(taken)).first() is not None:
            raise TaskTitleTaken(f"title: the suite has another task titled {changes['title']!r}")
    await conn.execute(update(k).where(k.c.uid == uid).values(**changes, updated_at=utcnow()))
    return await get_task(conn, factory, suite_uid, uid)


async def delete_task(
    conn: AsyncConnection, principal: Principal, factory: Factory, suite_uid: str, uid: str
) -> None:
    require_manage_access(principal, factory)
    await get_task(conn, factory, suite_uid, uid)
    await conn.execute(delete(k).where(k.c.uid == uid))


async def _check_source_run(
    conn: AsyncConnection, principal: Principal, run_id: str | None
) -> None:
    if run_id is None:
        return
    run = await find_run(conn, run_id)
    if run is None or not can_view(principal, run):
        raise InvalidRequest(f"source_run_id: no run {run_id} you can read")


def suite_json(row: Row[Any], tasks: list[Row[Any]] | None = None) -> dict[str, Any]:
    found = {
        "uid": row.uid,
        "factory_uid": row.factory_uid,
        "name": row.name,
        "description": row.description,
        "configurations": row.configurations,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if tasks is not None:
        found["tasks"] = [task_json(task) for task in tasks]
    return found


def task_json(row: Row[Any]) -> dict[str, Any]:
    return {
        "uid": row.uid,
        "suite_uid": row.suite_uid,
        "title": row.title,
        "prompt": row.prompt,
        "success_criteria": row.success_criteria,
        "source_run_id": row.source_run_id,
        "starting_repo_refs": row.starting_repo_refs or [],
        "tags": row.tags or [],
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
