"""Automations: a prompt plus webhook triggers whose payload filters decide when a run starts.

The rules take the request Structs of `models` and return `models.Automation`; callers pass a
connection of `Database.transaction()` for changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import UNSET
from sqlalchemy import Select, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.automations.models import MAX_PROMPT as MAX_PROMPT
from gateway.automations.models import MAX_TRIGGERS as MAX_TRIGGERS
from gateway.automations.models import (
    Automation,
    AutomationCreate,
    AutomationPatch,
    Trigger,
    encode_triggers,
)
from gateway.errors import InvalidRequest, NotFound
from gateway.store import tables as t
from gateway.store.types import utcnow
from gateway.types import JsonObject


def filter_fault(payload: JsonObject) -> str | None:
    """Why `payload` is not a payload filter: its own JSON path and the fault ("$.a.b: ...")."""
    from filters import FilterError, parse_filter  # the filter compiler; imported when used

    try:
        parse_filter(payload)
    except FilterError as exc:
        return f"{exc.path}: {exc.message}"
    return None


def check_filters(triggers: Sequence[Trigger]) -> None:
    """A 400 naming the first trigger whose payload filter does not compile."""
    for i, trigger in enumerate(triggers):
        payload = trigger.payload_filter
        if payload and (fault := filter_fault(payload)):
            raise InvalidRequest(f"triggers[{i}].filter.payload: {fault}")


async def check_webhooks(
    conn: AsyncConnection, factory_uid: str, triggers: Sequence[Trigger]
) -> None:
    """A 400 naming the first trigger whose webhook is not a live one of this factory."""
    wanted = {trigger.webhook_uid for trigger in triggers}
    found = set(
        (
            await conn.execute(
                select(t.webhooks.c.uid).where(
                    t.webhooks.c.uid.in_(wanted),
                    t.webhooks.c.factory_uid == factory_uid,
                    t.webhooks.c.deleted_at.is_(None),
                )
            )
        ).scalars()
    )
    for i, trigger in enumerate(triggers):
        if trigger.webhook_uid not in found:
            raise InvalidRequest(
                f"triggers[{i}].filter.webhook_ids: "
                f"no webhook {trigger.webhook_uid!r} in this factory"
            )


async def check_triggers(
    conn: AsyncConnection, factory_uid: str, triggers: Sequence[Trigger]
) -> None:
    """What saving these triggers needs: filters that compile, live webhooks of the factory."""
    check_filters(triggers)
    await check_webhooks(conn, factory_uid, triggers)


async def _write_triggers(
    conn: AsyncConnection, automation_uid: str, triggers: Sequence[Trigger]
) -> None:
    await conn.execute(
        delete(t.automation_triggers).where(
            t.automation_triggers.c.automation_uid == automation_uid
        )
    )
    rows = [
        {
            "automation_uid": automation_uid,
            "position": i,
            "webhook_uid": trigger.webhook_uid,
            "payload_filter": trigger.payload_filter,
        }
        for i, trigger in enumerate(triggers)
    ]
    await conn.execute(insert(t.automation_triggers), rows)


async def create_automation(
    conn: AsyncConnection,
    factory_uid: str,
    spec: AutomationCreate,
    *,
    definition_name: str | None = None,
) -> Automation:
    await check_triggers(conn, factory_uid, spec.triggers)
    uid, now = ids.new_id("auto"), utcnow()
    await conn.execute(
        insert(t.automations).values(
            uid=uid,
            factory_uid=factory_uid,
            name=spec.name,
            prompt=spec.prompt,
            enabled=spec.enabled,
            triggers=encode_triggers(spec.triggers),
            definition_name=definition_name,
            created_at=now,
            updated_at=now,
        )
    )
    await _write_triggers(conn, uid, spec.triggers)
    return await get_automation(conn, factory_uid, uid)


async def update_automation(
    conn: AsyncConnection, factory_uid: str, uid: str, patch: AutomationPatch
) -> Automation:
    """Changes the fields `patch` sets; new triggers replace the old ones."""
    if patch.triggers is not UNSET:
        check_filters(patch.triggers)  # a malformed body answers 400 before a missing one 404
    await require_automation(conn, factory_uid, uid)
    values: dict[str, object] = {
        name: getattr(patch, name)
        for name in ("name", "prompt", "enabled")
        if getattr(patch, name) is not UNSET
    }
    if patch.triggers is not UNSET:
        await check_webhooks(conn, factory_uid, patch.triggers)
        await _write_triggers(conn, uid, patch.triggers)
        values["triggers"] = encode_triggers(patch.triggers)
    await conn.execute(
        update(t.automations)
        .where(t.automations.c.uid == uid)
        .values(**values, updated_at=utcnow())
    )
    return await get_automation(conn, factory_uid, uid)


async def delete_automation(conn: AsyncConnection, factory_uid: str, uid: str) -> None:
    await require_automation(conn, factory_uid, uid)
    await conn.execute(
        delete(t.automation_triggers).where(t.automation_triggers.c.automation_uid == uid)
    )
    await conn.execute(delete(t.automations).where(t.automations.c.uid == uid))


async def require_automation(conn: AsyncConnection, factory_uid: str, uid: str) -> None:
    """404 unless the automation exists in this factory."""
    a = t.automations
    query = select(a.c.uid).where(a.c.uid == uid, a.c.factory_uid == factory_uid)
    if (await conn.execute(query)).first() is None:
        raise NotFound(f"automation: {uid} not found in this factory")


async def get_automation(conn: AsyncConnection, factory_uid: str, uid: str) -> Automation:
    a = t.automations
    query = select(a).where(a.c.uid == uid, a.c.factory_uid == factory_uid)
    found = await _automations(conn, query)
    if not found:
        raise NotFound(f"automation: {uid} not found in this factory")
    return found[0]


async def list_automations(conn: AsyncConnection, factory_uid: str) -> list[Automation]:
    a = t.automations
    query = select(a).where(a.c.factory_uid == factory_uid).order_by(a.c.created_at, a.c.uid)
    return await _automations(conn, query)


async def _automations(conn: AsyncConnection, query: Select[Any]) -> list[Automation]:
    rows = (await conn.execute(query)).all()
    deleted = await deleted_webhooks(conn, [row.uid for row in rows])
    return [Automation.from_row(row, deleted[row.uid]) for row in rows]


async def deleted_webhooks(
    conn: AsyncConnection, automation_uids: list[str]
) -> dict[str, list[str]]:
    """For each automation, the uids of its trigger webhooks that are deleted (they never fire)."""
    found: dict[str, list[str]] = {uid: [] for uid in automation_uids}
    if not automation_uids:
        return found
    joined = t.automation_triggers.join(
        t.webhooks, t.webhooks.c.uid == t.automation_triggers.c.webhook_uid
    )
    rows = await conn.execute(
        select(t.automation_triggers.c.automation_uid, t.webhooks.c.uid)
        .select_from(joined)
        .where(
            t.automation_triggers.c.automation_uid.in_(automation_uids),
            t.webhooks.c.deleted_at.is_not(None),
        )
    )
    for automation_uid, webhook_uid in rows:
        found[automation_uid].append(webhook_uid)
    return found
