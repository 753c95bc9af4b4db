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

import msgspec
from msgspec import UNSET
from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory, require_manage_access
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.catalog import ModelSpec, check_model
from gateway.kernel.errors import Conflict, InvalidRequest, NotFound
from gateway.platform.benchmark_suites.models import (
    Configuration,
    Suite,
    SuiteCreate,
    SuiteTask,
    SuiteTaskCreate,
    SuiteUpdate,
    TaskUpdate,
)
from gateway.platform.runs.record.store import can_view, find_run

s, k = t.benchmark_suites, t.benchmark_tasks
TASK_FIELDS = ("title", "prompt", "success_criteria", "source_run_id", "starting_repo_refs", "tags")
REQUIRED_TEXT = ("title", "prompt", "success_criteria")  # never null or blank
LISTS = ("starting_repo_refs", "tags")  # stored as null when empty


class TaskTitleTaken(Conflict):
    code, title = "task_title_taken", "A task of this suite has that title"


async def create_suite(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    spec: SuiteCreate,
    models: Sequence[ModelSpec],
) -> Suite:
    """The new suite, with its (no) tasks."""
    require_manage_access(principal, factory)
    check_configurations(spec.configurations, models)
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(s).values(
            uid=uid,
            factory_uid=factory.uid,
            name=spec.name,
            description=spec.description,
            configurations=msgspec.to_builtins(spec.configurations),
            created_by_uid=principal.uid,
            created_at=now,
            updated_at=now,
        )
    )
    created = await get_suite(conn, factory, uid)
    created.tasks = []
    return created


def check_configurations(configurations: list[Configuration], models: Sequence[ModelSpec]) -> None:
    """Distinct names; each model an enabled one of /agent/models."""
    names: set[str] = set()
    for i, configuration in enumerate(configurations):
        if configuration.name in names:
            raise InvalidRequest(f"configurations[{i}].name: {configuration.name!r} twice")
        names.add(configuration.name)
        if configuration.model_id is not None:
            check_model(models, configuration.model_id, f"configurations[{i}].model_id")


async def list_suites(conn: AsyncConnection, factory: Factory) -> list[Suite]:
    query = (
        select(s)
        .where(s.c.factory_uid == factory.uid, s.c.deleted_at.is_(None))
        .order_by(s.c.created_at, s.c.uid)
    )
    return [Suite.from_row(row) for row in await conn.execute(query)]


async def get_suite(conn: AsyncConnection, factory: Factory, uid: str) -> Suite:
    """A live suite of the factory, without its tasks; 404 otherwise (deleted ones too)."""
    row = (await conn.execute(select(s).where(s.c.uid == uid))).first()
    if row is None or row.factory_uid != factory.uid or row.deleted_at is not None:
        raise NotFound(f"suite_uid: no suite {uid} in this factory")
    return Suite.from_row(row)


async def read_suite(conn: AsyncConnection, factory: Factory, uid: str) -> Suite:
    """A live suite of the factory with its tasks."""
    suite = await get_suite(conn, factory, uid)
    suite.tasks = await suite_tasks(conn, uid)
    return suite


async def update_suite(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    uid: str,
    changes: SuiteUpdate,
    models: Sequence[ModelSpec],
) -> Suite:
    """The suite changed as given, with its tasks."""
    require_manage_access(principal, factory)
    await get_suite(conn, factory, uid)
    values: dict[str, object] = {}
    if changes.name is not UNSET:
        values["name"] = changes.name
    if changes.description is not UNSET:
        values["description"] = changes.description
    if changes.configurations is not UNSET:
        check_configurations(changes.configurations, models)
        values["configurations"] = msgspec.to_builtins(changes.configurations)
    if not values:
        raise InvalidRequest("body: give at least one of name, description, configurations")
    await conn.execute(update(s).where(s.c.uid == uid).values(**values, updated_at=utcnow()))
    return await read_suite(conn, factory, uid)


async def delete_suite(
    conn: AsyncConnection, principal: Principal, factory: Factory, uid: str
) -> None:
    require_manage_access(principal, factory)
    await get_suite(conn, factory, uid)
    now = utcnow()
    await conn.execute(update(s).where(s.c.uid == uid).values(deleted_at=now, updated_at=now))


async def suite_tasks(conn: AsyncConnection, suite_uid: str) -> list[SuiteTask]:
    query = select(k).where(k.c.suite_uid == suite_uid).order_by(k.c.created_at, k.c.uid)
    return [SuiteTask.from_row(row) for row in await conn.execute(query)]


async def add_task(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    suite_uid: str,
    spec: SuiteTaskCreate,
) -> tuple[SuiteTask, bool]:
    """(the task, whether it was created): an identical one is answered as it is."""
    require_manage_access(principal, factory)
    await get_suite(conn, factory, suite_uid)
    values: dict[str, object] = {name: getattr(spec, name) for name in TASK_FIELDS}
    for name in LISTS:
        values[name] = values[name] or None
    await _check_source_run(conn, principal, spec.source_run_id)
    same_title = (
        await conn.execute(select(k).where(k.c.suite_uid == suite_uid, k.c.title == spec.title))
    ).first()
    if same_title is not None:
        if all(getattr(same_title, name) == values[name] for name in TASK_FIELDS):
            return SuiteTask.from_row(same_title), False
        raise TaskTitleTaken(f"title: the suite has a different task titled {spec.title!r}")
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(k).values(uid=uid, suite_uid=suite_uid, created_at=now, updated_at=now, **values)
    )
    return await get_task(conn, factory, suite_uid, uid), True


async def get_task(conn: AsyncConnection, factory: Factory, suite_uid: str, uid: str) -> SuiteTask:
    await get_suite(conn, factory, suite_uid)
    row = (await conn.execute(select(k).where(k.c.uid == uid))).first()
    if row is None or row.suite_uid != suite_uid:
        raise NotFound(f"task_uid: no task {uid} in this suite")
    return SuiteTask.from_row(row)


async def update_task(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    suite_uid: str,
    uid: str,
    changes: TaskUpdate,
) -> SuiteTask:
    require_manage_access(principal, factory)
    await get_task(conn, factory, suite_uid, uid)
    values: dict[str, object] = {
        name: value for name in TASK_FIELDS if (value := getattr(changes, name)) is not UNSET
    }
    if not values:
        raise InvalidRequest(f"body: give at least one of {', '.join(TASK_FIELDS)}")
    for name in REQUIRED_TEXT:
        if name in values and (values[name] is None or not str(values[name]).strip()):
            raise InvalidRequest(f"{name}: may not be null or blank")
    for name in LISTS:
        if name in values and not values[name]:
            values[name] = None  # explicitly empty: cleared
    if isinstance(changes.source_run_id, str):
        await _check_source_run(conn, principal, changes.source_run_id)
    if isinstance(changes.title, str):
        taken = select(k.c.uid).where(
            k.c.suite_uid == suite_uid, k.c.title == changes.title, k.c.uid != uid
        )
        if (await conn.execute(taken)).first() is not None:
            raise TaskTitleTaken(f"title: the suite has another task titled {changes.title!r}")
    await conn.execute(update(k).where(k.c.uid == uid).values(**values, updated_at=utcnow()))
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
